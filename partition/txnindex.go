package partition

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
)

// The aborted-transaction index is a partition's side file listing its
// aborted transactions (AbortedTxn), so that read_committed reads hide
// them after a restart however old they are: the rebuild at open reads
// only the recent segments (recoverProducers), which would forget an
// abort older than that window. It is rewritten whole (temp file, fsync,
// rename, fsync of the directory) each time an ABORT marker ends a
// transaction, which is rare next to data batches, and at open; entries
// below the log's start offset (deleted by retention) are dropped then.
// A missing or damaged file holds nothing: the open falls back to the
// recent segments' aborts, as the log itself still has every marker.
const (
	txnIndexName  = "aborted.txnindex"
	txnIndexMagic = "logdtxi1"
	txnEntrySize  = 24
)

var txnCRC = crc32.MakeTable(crc32.Castagnoli)

// encodeTxnIndex is the file: magic, entries (producer id, first and
// last offset, big endian), then the CRC-32C of all before it.
func encodeTxnIndex(list []AbortedTxn) []byte {
	b := make([]byte, 0, len(txnIndexMagic)+len(list)*txnEntrySize+4)
	b = append(b, txnIndexMagic...)
	for _, a := range list {
		b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
		b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, txnCRC))
}

var errTxnIndex = errors.New("damaged aborted-transaction index")

func decodeTxnIndex(b []byte) ([]AbortedTxn, error) {
	n := len(b) - len(txnIndexMagic) - 4
	if n < 0 || n%txnEntrySize != 0 || string(b[:len(txnIndexMagic)]) != txnIndexMagic ||
		binary.BigEndian.Uint32(b[len(b)-4:]) != crc32.Checksum(b[:len(b)-4], txnCRC) {
		return nil, errTxnIndex
	}
	out := make([]AbortedTxn, 0, n/txnEntrySize)
	for e := b[len(txnIndexMagic) : len(b)-4]; len(e) > 0; e = e[txnEntrySize:] {
		out = append(out, AbortedTxn{
			ProducerID:  int64(binary.BigEndian.Uint64(e)),
			FirstOffset: int64(binary.BigEndian.Uint64(e[8:])),
			LastOffset:  int64(binary.BigEndian.Uint64(e[16:])),
		})
	}
	return out, nil
}

// loadTxnIndex merges the index file's aborts that lie in [start, scanned)
// (kept by retention, older than the segments the open scanned) into the
// state the scan rebuilt, and rewrites the file.
func (p *Partition) loadTxnIndex(start, scanned int64) error {
	dir := p.Log.Dir()
	b, err := os.ReadFile(filepath.Join(dir, txnIndexName))
	var old []AbortedTxn
	if err == nil {
		old, _ = decodeTxnIndex(b) // damaged: the scan's aborts only
	} else if !os.IsNotExist(err) {
		return err
	}
	missing := err != nil
	t := &p.txn
	t.mu.Lock()
	keep := slices.DeleteFunc(old, func(a AbortedTxn) bool { return a.LastOffset < start || a.LastOffset >= scanned })
	t.aborted = append(keep, t.aborted...)
	empty := len(t.aborted) == 0
	t.mu.Unlock()
	if missing && empty {
		return nil // no file and nothing to write
	}
	return p.saveTxnIndex()
}

// saveTxnIndex writes the aborted list to the index file.
func (p *Partition) saveTxnIndex() error {
	t := &p.txn
	t.fileMu.Lock()
	defer t.fileMu.Unlock()
	t.mu.Lock()
	b := encodeTxnIndex(t.aborted)
	t.mu.Unlock()
	dir := p.Log.Dir()
	name := filepath.Join(dir, txnIndexName)
	tmp := name + ".tmp"
	err := writeSynced(tmp, b)
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

func writeSynced(name string, b []byte) error {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
