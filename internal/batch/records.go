package batch

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one decoded record with its absolute offset and timestamp.
type Record struct {
	Offset    int64
	Timestamp int64 // ms since the Unix epoch
	Key       []byte
	Value     []byte
	Headers   []Header
}

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// Producer identifies an idempotent producer's batch. ID -1 means none.
type Producer struct {
	ID       int64
	Epoch    int16
	Sequence int32 // sequence number of the batch's first record
}

// NoProducer is the Producer of a batch that is not idempotent.
var NoProducer = Producer{ID: -1, Epoch: -1, Sequence: -1}

// Encode appends one uncompressed batch holding recs to dst and returns it.
// Record offsets are assigned from baseOffset in order (the log rewrites the
// base offset on append); record timestamps are kept as given.
func Encode(dst []byte, baseOffset int64, p Producer, recs []Record) []byte {
	rb := kmsg.RecordBatch{
		FirstOffset:          baseOffset,
		PartitionLeaderEpoch: -1,
		Magic:                Magic,
		LastOffsetDelta:      int32(len(recs) - 1),
		ProducerID:           p.ID,
		ProducerEpoch:        p.Epoch,
		FirstSequence:        p.Sequence,
	}
	return encode(dst, rb, recs, false)
}

// encode appends the batch of header rb (its timestamps set from recs
// when there are any) and recs, whose offset deltas are their positions,
// or, kept, their offsets less the base offset.
func encode(dst []byte, rb kmsg.RecordBatch, recs []Record, kept bool) []byte {
	// Grow once to (at least) the encoded size: appending a MiB-sized batch
	// record by record would copy it again at every doubling.
	need := HeaderSize
	for i := range recs {
		need += maxRecordOverhead + len(recs[i].Key) + len(recs[i].Value)
		for _, h := range recs[i].Headers {
			need += 2*binary.MaxVarintLen32 + len(h.Key) + len(h.Value)
		}
	}
	dst = slices.Grow(dst, need)
	start := len(dst)
	if len(recs) > 0 {
		rb.FirstTimestamp, rb.MaxTimestamp = recs[0].Timestamp, recs[0].Timestamp
		for _, r := range recs[1:] {
			rb.FirstTimestamp = min(rb.FirstTimestamp, r.Timestamp)
			rb.MaxTimestamp = max(rb.MaxTimestamp, r.Timestamp)
		}
	}
	rb.NumRecords = int32(len(recs))
	dst = rb.AppendTo(dst)
	var kr kmsg.Record
	var scratch []byte
	for i := range recs {
		r := &recs[i]
		delta := int32(i)
		if kept {
			delta = int32(r.Offset - rb.FirstOffset)
		}
		kr = kmsg.Record{
			TimestampDelta64: r.Timestamp - rb.FirstTimestamp,
			OffsetDelta:      delta,
			Key:              r.Key,
			Value:            r.Value,
		}
		kr.Headers = kr.Headers[:0]
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		// The record length prefix counts the bytes after it: encode the body
		// with length 0 to measure it, then write the real prefix.
		scratch = kr.AppendTo(scratch[:0])
		body := scratch[varintLen(0):]
		dst = binary.AppendVarint(dst, int64(len(body)))
		dst = append(dst, body...)
	}
	b := dst[start:]
	binary.BigEndian.PutUint32(b[lengthOffset:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[crcOffset:], Checksum(b))
	return dst
}

// maxRecordOverhead bounds a record's encoding besides its key, value and
// headers: length, attributes, timestamp delta, offset delta, key and value
// lengths and header count, each at its longest varint.
const maxRecordOverhead = 1 + 5*binary.MaxVarintLen32 + binary.MaxVarintLen64

// minRecordSize is the fewest bytes a record takes: its length and six
// one-byte fields (attributes, timestamp and offset deltas, key and value
// lengths, header count).
const minRecordSize = 7

func varintLen(v int64) int {
	var tmp [binary.MaxVarintLen64]byte
	return binary.PutVarint(tmp[:], v)
}

// Decode verifies one whole batch (header and CRC) and returns its records.
// Records with an offset below from are skipped. Keys, values and header
// values alias b, or for a compressed batch the buffer it decompresses to.
func Decode(b []byte, from int64) (Info, []Record, error) {
	info, err := Verify(b)
	if err != nil {
		return info, nil, err
	}
	rest, err := records(b, info)
	if err != nil {
		return info, nil, err
	}
	recs := make([]Record, 0, min(int(info.NumRecords), len(rest)/minRecordSize))
	prev := int32(-1)
	for i := int32(0); i < info.NumRecords; i++ {
		n, k := binary.Varint(rest)
		if k <= 0 || n < 0 || int64(len(rest)-k) < n {
			return info, nil, fmt.Errorf("%w: record %d of %d: bad length", ErrCorrupt, i, info.NumRecords)
		}
		var kr kmsg.Record
		if err := kr.UnsafeReadFrom(rest[:k+int(n)]); err != nil {
			return info, nil, fmt.Errorf("%w: record %d of %d: %v", ErrCorrupt, i, info.NumRecords, err)
		}
		rest = rest[k+int(n):]
		// Offset deltas are the records' positions, or, in a batch the
		// cleaner rewrote, increasing with gaps up to the last delta.
		if kr.OffsetDelta < i || kr.OffsetDelta <= prev || kr.OffsetDelta > info.LastOffsetDelta {
			return info, nil, fmt.Errorf("%w: record %d of %d has offset delta %d", ErrCorrupt, i, info.NumRecords, kr.OffsetDelta)
		}
		prev = kr.OffsetDelta
		off := info.BaseOffset + int64(kr.OffsetDelta)
		if off < from {
			continue
		}
		ts := kr.TimestampDelta64
		if ts == 0 {
			ts = int64(kr.TimestampDelta)
		}
		r := Record{Offset: off, Timestamp: info.FirstTimestamp + ts, Key: kr.Key, Value: kr.Value}
		if info.LogAppendTime() {
			r.Timestamp = info.MaxTimestamp // the broker's stamp, as Kafka's clients read it
		}
		for _, h := range kr.Headers {
			r.Headers = append(r.Headers, Header{Key: h.Key, Value: h.Value})
		}
		recs = append(recs, r)
	}
	if len(rest) != 0 {
		return info, nil, fmt.Errorf("%w: %d bytes after the last record", ErrCorrupt, len(rest))
	}
	return info, recs, nil
}

// Split calls fn for each whole batch in b, a concatenation of batches, in
// order, without verifying CRCs. It stops at the first error (a short or
// malformed batch) and returns it.
func Split(b []byte, fn func(batch []byte, info Info) error) error {
	for len(b) > 0 {
		info, err := ParseHeader(b)
		if err != nil {
			return err
		}
		if len(b) < info.Size() {
			return ErrShort
		}
		if err := fn(b[:info.Size()], info); err != nil {
			return err
		}
		b = b[info.Size():]
	}
	return nil
}
