package replication

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// ApplyResult is what applying a batch entry returns to the Raft future
// of the leader that appended it: the offsets the batch got. It is the
// log's Span, so that a Write is the partition's future as it is
// (partition.Write), without an adapter.
type ApplyResult = log.Span

// PartitionFSM is a partition group's Raft state machine. The records are
// already in the log when an entry is applied (the log is the log store),
// so applying one only moves the log's high watermark, making the batch
// readable.
type PartitionFSM struct {
	log   *log.Log
	store *LogStore
	// onApply, when set, sees every applied batch (its header and bytes),
	// in log order, before the high watermark moves past it (the server
	// keeps its producers' dedup state and its open transactions with it
	// on every replica: a read must never find a batch the state lacks).
	onApply func(batch.Info, []byte)
	// onRestore, when set, is called after a snapshot was restored (at
	// start or installed by the leader, segments copied or not): the
	// batches up to it were never applied here, so state kept with
	// onApply must be rebuilt from the log.
	onRestore func()
	// snapshotAt, when set, returns the Raft index and term of the
	// snapshot being restored (the partition reads them from its snapshot
	// store).
	snapshotAt func() (index, term uint64)
	// catchUp, when set, copies the leader's segments through a snapshot
	// this log cannot continue at (a follower behind the leader's log
	// start); it leaves the log ending at the snapshot, or unchanged.
	catchUp func(s PartitionSnapshot, index uint64) error

	mu        sync.Mutex
	lastIndex uint64 // of the last applied batch entry
	lastTerm  uint64
	shares    map[string]ShareState // by share group (sharestate.go)
}

var _ raft.FSM = (*PartitionFSM)(nil)

// NewPartitionFSM returns the state machine of the partition whose log
// store is s over l.
func NewPartitionFSM(l *log.Log, s *LogStore) *PartitionFSM {
	return &PartitionFSM{log: l, store: s}
}

// Apply moves the high watermark past a committed batch and returns its
// ApplyResult (an error for an entry that is not a batch, which the log
// store never stores). Applying an entry again, as Raft does after a
// restart, is harmless: the high watermark never moves back.
func (f *PartitionFSM) Apply(e *raft.Log) any {
	f.store.applying()
	if isCommand(e.Data) {
		return f.applyCommand(e)
	}
	info, err := batch.ParseHeader(e.Data)
	if err != nil {
		return fmt.Errorf("%w: index %d: %v", ErrNotBatch, e.Index, err)
	}
	if f.onApply != nil {
		f.onApply(info, e.Data)
	}
	if f.log.HighWatermark() < info.NextOffset() {
		f.log.SetHighWatermark(info.NextOffset())
	}
	f.mu.Lock()
	f.lastIndex, f.lastTerm = e.Index, e.Term
	f.mu.Unlock()
	return ApplyResult{BaseOffset: info.BaseOffset, LastOffset: info.LastOffset()}
}

// applyCommand applies a logd command entry: a sleep marker changes
// nothing; a delete records command moves the log start to the
// command's offset (every replica: the leader checked it against its high
// watermark, which is the high watermark every replica has when it applies
// the entry, as the entries before it are the same). It returns the log
// start offset now in force, or an error for a command this version does
// not know. Applying it again after a restart is a no-op.
func (f *PartitionFSM) applyCommand(e *raft.Log) any {
	f.mu.Lock()
	f.lastIndex, f.lastTerm = e.Index, e.Term
	f.mu.Unlock()
	if isSleep(e.Data) {
		return nil
	}
	if isShareState(e.Data) {
		return f.applyShareState(e)
	}
	off, err := decodeDeleteRecords(e.Data)
	if err != nil {
		return fmt.Errorf("index %d: %w", e.Index, err)
	}
	start, err := f.log.AdvanceStart(min(off, f.log.HighWatermark()))
	if err != nil {
		// The log start file could not be written: the start moves on
		// the next apply (a restart replays the entry) or snapshot.
		return fmt.Errorf("replication: index %d: move the log start to %d: %w", e.Index, off, err)
	}
	return start
}

// PartitionSnapshot is a partition snapshot's content: metadata only,
// never records (those are in every replica's log). Stored as JSON.
type PartitionSnapshot struct {
	Version        int    `json:"version"` // 1
	LogStartOffset int64  `json:"log_start_offset"`
	HighWatermark  int64  `json:"high_watermark"`
	LastIndex      uint64 `json:"last_index"` // last applied batch entry
	LastTerm       uint64 `json:"last_term"`
	// Producer dedup state goes here (follow-up).
}

// snapshotFile is a partition snapshot as stored: the metadata and the
// share groups' states of the partition (sharestate.go), absent from a
// snapshot of a partition no share group used.
type snapshotFile struct {
	PartitionSnapshot
	Shares map[string]ShareState `json:"shares,omitempty"`
}

const partitionSnapshotVersion = 1

// Snapshot captures the metadata at the applied index.
func (f *PartitionFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &fsmSnapshot{snapshotFile{PartitionSnapshot{
		Version:        partitionSnapshotVersion,
		LogStartOffset: f.log.StartOffset(),
		HighWatermark:  f.log.HighWatermark(),
		LastIndex:      f.lastIndex,
		LastTerm:       f.lastTerm,
	}, f.shareStates()}}, nil
}

// Restore loads a snapshot's metadata and share states (which replace
// the ones applied: the entries after the snapshot are applied again
// next). The records it covers are either
// already in the log (restart), or, when the leader installed it, Raft
// removes the log next and this replica's records restart from there. When
// the removed log would not restart at the snapshot's high watermark (this
// replica fell behind the leader's log start), the leader's segments up to
// the snapshot are copied first (catchUp): the log then ends exactly at
// the snapshot, holding the leader's records at the leader's offsets, and
// the log store keeps it. Without catchUp, or when the copy fails, the
// install is refused (ErrOffsetGap) and the leader retries it later.
func (f *PartitionFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var file snapshotFile
	if err := json.NewDecoder(rc).Decode(&file); err != nil {
		return fmt.Errorf("replication: restore partition snapshot: %w", err)
	}
	s := file.PartitionSnapshot
	if s.Version != partitionSnapshotVersion {
		return fmt.Errorf("replication: restore partition snapshot: version %d, want %d", s.Version, partitionSnapshotVersion)
	}
	var index, term uint64
	if f.snapshotAt != nil {
		index, term = f.snapshotAt()
	}
	if f.store.running() && !f.store.fits(s.HighWatermark, index, term) {
		// Installed by the leader, but this log cannot continue at the
		// snapshot's offsets. Refusing the install (rather than accepting it
		// and refusing the log's removal) makes the leader back off
		// exponentially instead of resending it at once, forever.
		gap := fmt.Errorf("%w: the snapshot ends at offset %d; this replica's log starts at %d and ends at %d",
			ErrOffsetGap, s.HighWatermark, f.log.StartOffset(), f.log.NextOffset())
		if f.catchUp == nil || index == 0 {
			return gap
		}
		if err := f.catchUp(s, index); err != nil {
			return fmt.Errorf("%w; catching up by segment copy: %w", gap, err)
		}
	}
	f.store.snapshotRestored(s.HighWatermark, index, term)
	// The high watermark never moves back: what it passed was committed.
	// A replica whose Raft starts again on a log it kept serving
	// (Node.restartStale) restores a snapshot older than what it applied;
	// lowering the mark to it until the entries are applied again would
	// answer readers of offsets they were given (a live tail) with
	// out-of-range.
	if s.HighWatermark > f.log.HighWatermark() {
		f.log.SetHighWatermark(s.HighWatermark)
	}
	// The log start moved by DeleteRecords (a no-op when the log starts
	// there already, or later).
	if _, err := f.log.AdvanceStart(min(s.LogStartOffset, f.log.HighWatermark())); err != nil {
		return fmt.Errorf("replication: restore partition snapshot: log start %d: %w", s.LogStartOffset, err)
	}
	f.mu.Lock()
	f.lastIndex, f.lastTerm = s.LastIndex, s.LastTerm
	f.shares = file.Shares
	f.mu.Unlock()
	if f.onRestore != nil {
		f.onRestore()
	}
	return nil
}

type fsmSnapshot struct{ s snapshotFile }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	b, err := json.Marshal(s.s)
	if err == nil {
		_, err = sink.Write(b)
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("replication: persist partition snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
