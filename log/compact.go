package log

// Compaction: the cleaner of a log whose topic has cleanup.policy compact.
//
// # What it owns
//
// Compact rewrites closed segments so that, of the records it has seen,
// only the newest of each key remains (Kafka's log compaction). It owns the
// rewrite of a segment and its swap into the log; the decision when to run
// (dirty ratio, max lag) and the Raft bound belong to the caller, which
// passes them in CompactOptions.
//
// # What is kept
//
// The cleaner works record by record, but never merges or splits an
// entry: each entry of a segment stays one entry, so the segment's Raft
// indexes (its ordinals) and its offsets do not move:
//
//   - a batch all of whose records are kept stays byte for byte;
//   - a batch some of whose records go is rewritten with the others
//     (batch.Rewrite, as Kafka's cleaner does): the same base offset and
//     last offset delta (so it still owns all its offsets, and the next
//     batch's offset follows), leader epoch and producer id, epoch and
//     first sequence; each record keeps its offset and timestamp; the CRC
//     is the new bytes'; a compressed batch is compressed again with its
//     codec;
//   - a batch none of whose records is kept becomes, when it is an
//     idempotent producer's, an empty batch (Kafka's too), which keeps its
//     offsets and producer fields: the producer's dedup state, rebuilt
//     from the log's batches on open, is the same as before the clean;
//     any other such batch becomes a compacted entry (magic 100, type 3,
//     30 bytes) owning its offsets and holding no record; readers step
//     over both;
//   - a transaction's batches and markers follow Kafka's rules
//     (compact_txn.go): an aborted transaction's records are removed, and
//     a marker goes after its horizon once no batch of its transaction is
//     left below it;
//   - batches that do not decode, Raft entries and compacted entries are
//     kept as they are.
//
// A record is removed when a newer record of its key was seen (in the
// key map), when it has no key (a compacted topic refuses those; older
// ones are dropped as Kafka's cleaner does), when it is of an aborted
// transaction, or when it is a tombstone (a
// null value) in a segment first cleaned more than DeleteRetention ago
// (Kafka's delete horizon: the time a segment was first cleaned is
// stamped in the cleaner file, compact_state.go). A segment is stamped
// only at the end of the pass that mapped its records, which rewrote every
// segment before it against that key map: every record older than one of
// its tombstones was removed then, so none of them outlives it.
//
// Entry (Raft) answers ErrNotFound for a rewritten batch as for a
// compacted entry: only entries the latest Raft snapshot covers are
// rewritten, and Raft sends the snapshot instead.
//
//	compacted entry
//	     0   17 prefix        base offset of the removed batch, magic 100
//	    17    4 CRC-32C       of bytes 21..end
//	    21    1 type          3
//	    22    8 next offset   the offset after the removed batch
//
// # Which segments
//
// Only closed segments, never the active one, and only a prefix of them:
// each must end at or below Below (the caller's bound: the high watermark,
// and in a replicated partition Replica.TrimLimit, the same bound retention
// deletes below, so only entries covered by the latest Raft snapshot are
// rewritten; Entry returns ErrNotFound for a compacted entry, and Raft
// sends its snapshot to a follower that would need one) and its newest
// record must be older than MinLag.
//
// # Passes, the key map and the clean point
//
// A pass reads the dirty segments (from the clean point, the first offset
// not yet cleaned) into the key map, a hash of each key (128 bits) to its
// newest offset, until the map holds MapEntries keys; it then rewrites
// every segment from the first up to the last one the map covers. Records
// at or after the map's end are kept untouched. When the dirty segments
// hold more keys than the map, more passes follow, each from where the
// last one stopped. After each pass the clean point and the stamps of the
// segments it cleaned for the first time are written to the cleaner file,
// so a restart neither cleans again what is clean nor forgets a horizon.
//
// # Crash safety
//
// A segment is rewritten beside the original (NNN.log.clean.tmp), fsynced,
// then, under the log's lock, after checking the segment is still the one
// that was read (not deleted by retention, cut by a truncation or replaced
// by an install), its index files are removed and it is renamed over
// NNN.log; then the directory is fsynced and the new index files written.
// A crash before the rename leaves a *.tmp that Open removes (the old
// segment); after it, the new segment; either one's missing index files
// are rebuilt by Open, as for any index in doubt. So a kill -9 at any step
// leaves the old or the new segment, never a mix, and never an index of
// the other. Readers that hold the old segment's file keep reading it.
// The cleaner file is written after the pass's segments (temp, fsync,
// rename, directory fsync): a crash before its rename leaves the last
// pass's clean point and stamps.
//
// # Invariants
//
//   - Offsets never move and are never reused; a segment's base offset,
//     next offset, first Raft index and entry count are unchanged.
//   - Every record left is byte for byte (key, value, headers) a record
//     that was appended, at its offset, with its timestamp; every batch
//     keeps its producer fields.
//   - A segment's index files are rebuilt from its bytes. It does not
//     grow, but for a compressed batch whose codec does worse on fewer
//     records.

import (
	"context"
	"errors"
	"time"
)

// CompactOptions are the caller's bounds of a Compact.
type CompactOptions struct {
	// Below: only segments whose records all lie below it are rewritten.
	// In a partition with transactions it is at most the last stable
	// offset: every transactional record below it is of an ended
	// transaction.
	Below int64
	// Aborted lists the aborted transactions whose records may lie below
	// Below (the partition's aborted-transaction index): their records
	// are left out of the key map and removed (compact_txn.go). Read it
	// after the last stable offset that bounds Below, so that a
	// transaction that ends in between is not taken for a committed one.
	Aborted []AbortedSpan
	// MinLag: a segment whose newest record is younger is not touched.
	MinLag time.Duration
	// DeleteRetention: a tombstone older than this is removed.
	DeleteRetention time.Duration
	// MapEntries bounds the key map (default 1<<20 keys, about 48 MiB).
	MapEntries int
	// BytesPerSecond bounds the cleaner's reads and writes (0: no bound).
	BytesPerSecond int64
	// Now is the time tombstones and lags are measured from (default now).
	Now time.Time
	// Context, when set, stops the compaction when done (between
	// entries; a segment not yet swapped in stays as it was).
	Context context.Context
	// Step, when set, is called after each step of a segment's swap
	// ("written", "renamed", "dirsynced") and after a pass's cleaner file
	// is written ("stamped"); an error stops the compaction there, as a
	// crash would (tests).
	Step func(step string) error
}

// CompactResult is what a Compact did.
type CompactResult struct {
	Passes    int
	Segments  int   // segments rewritten
	Read      int64 // bytes read (key map and rewrite)
	Reclaimed int64 // bytes the segments shrank by
	Removed   int64 // batches turned into compacted entries
	// RecordsRemoved counts the records the rewritten segments lost.
	RecordsRemoved int64
	// CleanedTo: every record below it has been cleaned against the
	// newer ones up to it.
	CleanedTo int64
}

// cleanerState is what the log keeps for its cleaner, under Log.mu: the
// offset below which it is clean and when each cleaned segment was first
// cleaned, as in the cleaner file (compact_state.go), read when the log is
// opened.
type cleanerState struct {
	cleanedTo int64
	stamps    []stamp // by base offset (compact_state.go)
	gen       uint64  // counts the loads of the state (open, install)
	running   bool
}

// errCompactionRunning is returned by Compact while another runs.
var errCompactionRunning = errors.New("log: a compaction of this log is already running")

// DirtyStats is what the cleaner's scheduling needs of a log.
type DirtyStats struct {
	CleanableBytes int64 // closed segments below the bound and older than the lag
	DirtyBytes     int64 // of those, the bytes not yet cleaned
	// OldestDirty is the newest-record time of the oldest dirty segment
	// (zero when none): its age is the cleaner's lag.
	OldestDirty time.Time
	CleanedTo   int64
	// HorizonDue: a cleaned segment holds a tombstone or a transaction
	// marker past its delete horizon, which a Compact would remove though
	// nothing is dirty.
	HorizonDue bool
}

// Ratio is the dirty share of the cleanable bytes (0 when none).
func (d DirtyStats) Ratio() float64 {
	if d.CleanableBytes == 0 {
		return 0
	}
	return float64(d.DirtyBytes) / float64(d.CleanableBytes)
}

// Dirty measures the segments a Compact with these options would consider.
func (l *Log) Dirty(opts CompactOptions) DirtyStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	segs := l.cleanableLocked(opts)
	now := opts.Now
	if now.IsZero() {
		now = l.opts.Now()
	}
	due := l.horizonDueLocked(segs, now, opts.DeleteRetention)
	d := DirtyStats{CleanedTo: max(l.cleaner.cleanedTo, l.start), HorizonDue: due.tombstones || due.markers}
	for _, s := range segs {
		d.CleanableBytes += s.size
		if s.next > d.CleanedTo {
			d.DirtyBytes += s.size
			if d.OldestDirty.IsZero() {
				d.OldestDirty = segmentTime(s)
			}
		}
	}
	return d
}

// segmentTime is when a segment's newest record was written (its
// creation when it holds none).
func segmentTime(s *segment) time.Time {
	if s.maxTS >= 0 {
		return time.UnixMilli(s.maxTS)
	}
	return s.created
}

// cleanableLocked is the prefix of closed segments opts allows to touch.
func (l *Log) cleanableLocked(opts CompactOptions) []*segment {
	now := opts.Now
	if now.IsZero() {
		now = l.opts.Now()
	}
	below := min(opts.Below, l.hw)
	n := 0
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.active || s.next > below || now.Sub(segmentTime(s)) < opts.MinLag {
			break
		}
		n++
	}
	return l.segs[:n]
}
