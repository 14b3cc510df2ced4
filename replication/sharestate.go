package replication

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"

	"github.com/hashicorp/raft"
)

// A share group's state of a partition (docs/share-groups.md) is
// replicated through the partition's own Raft log as a command entry that
// owns no offset, applied by every replica's state machine, and carried
// by the partition's snapshot. The state is opaque here (package share's
// encoding); each entry holds a share group's whole state of the
// partition and replaces the one before:
//
//	share state command
//	     0   16 zero
//	    16    1 magic      101
//	    17    1 type       3
//	    18    2 group      length, big-endian, 1 or more
//	    20    n group      the share group's name
//	  20+n    - state      the share partition's encoded state
//
// The partition's Raft group is one incarnation of its topic, so a
// topic created again under its name starts with no share state.
const (
	commandShareState byte = 3
	shareHeaderSize   int  = 20
)

// ShareState is a share group's state of a partition as a replica
// applied it: Index is the Raft index of the entry that wrote it, which
// tells a leader whether anyone wrote it since it last did.
type ShareState struct {
	Index uint64 `json:"index"`
	State []byte `json:"state"`
}

func isShareState(b []byte) bool {
	return len(b) >= shareHeaderSize && b[16] == commandMagic && b[17] == commandShareState
}

func encodeShareState(group string, state []byte) []byte {
	b := make([]byte, shareHeaderSize, shareHeaderSize+len(group)+len(state))
	b[16], b[17] = commandMagic, commandShareState
	binary.BigEndian.PutUint16(b[18:], uint16(len(group)))
	b = append(b, group...)
	return append(b, state...)
}

func decodeShareState(b []byte) (string, []byte, error) {
	if !isShareState(b) {
		return "", nil, fmt.Errorf("%w: %d bytes, type %d", ErrBadCommand, len(b), typeOf(b))
	}
	n := int(binary.BigEndian.Uint16(b[18:]))
	if n == 0 || shareHeaderSize+n > len(b) {
		return "", nil, fmt.Errorf("%w: share state of a %d-byte group name in %d bytes", ErrBadCommand, n, len(b))
	}
	return string(b[shareHeaderSize : shareHeaderSize+n]), b[shareHeaderSize+n:], nil
}

// applyShareState records a share group's state; applying an entry again
// after a restart replays the log in order, so the last entry's state is
// the group's.
func (f *PartitionFSM) applyShareState(e *raft.Log) any {
	group, state, err := decodeShareState(e.Data)
	if err != nil {
		return fmt.Errorf("index %d: %w", e.Index, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shares == nil {
		f.shares = map[string]ShareState{}
	}
	f.shares[group] = ShareState{Index: e.Index, State: append([]byte(nil), state...)}
	return e.Index
}

// shareStates copies the share states for a snapshot. f.mu is held.
func (f *PartitionFSM) shareStates() map[string]ShareState {
	if len(f.shares) == 0 {
		return nil
	}
	return maps.Clone(f.shares)
}

// ShareState returns share group's state of the partition as this
// replica applied it (ok false: none was written). Only the leader's,
// after Leading, holds every committed change.
func (p *Replica) ShareState(group string) (ShareState, bool) {
	p.fsm.mu.Lock()
	defer p.fsm.mu.Unlock()
	s, ok := p.fsm.shares[group]
	return s, ok
}

// PutShareState replicates share group's new state of the partition and
// returns the Raft index of its entry once it is committed and applied
// here. Called on the leader; a replica that does not lead answers a
// *NotLeaderError. When ctx ends first the outcome is unknown
// (ErrOutcomeUnknown).
func (p *Replica) PutShareState(ctx context.Context, group string, state []byte) (uint64, error) {
	if group == "" || len(group) > 0xffff {
		return 0, fmt.Errorf("replication: %s: share group name of %d bytes", p.group, len(group))
	}
	if _, err := p.Leading(ctx); err != nil {
		return 0, err
	}
	res, err := p.replicate(ctx, encodeShareState(group, state))
	if err != nil {
		return 0, err
	}
	switch r := res.(type) {
	case uint64:
		return r, nil
	case error:
		return 0, r
	}
	return 0, fmt.Errorf("replication: %s: unexpected apply response %T", p.group, res)
}

// replicate appends a command entry and waits until it is applied here,
// returning the state machine's response.
func (p *Replica) replicate(ctx context.Context, cmd []byte) (any, error) {
	in := p.inst()
	f := in.Apply(cmd, 0)
	done := make(chan struct{})
	var res any
	var err error
	in.watch(f, func(e error) {
		if err = e; err == nil {
			res = f.Response()
		}
		close(done)
	})
	select {
	case <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %s: %w", ErrOutcomeUnknown, p.group, ctx.Err())
	}
	if err != nil {
		return nil, p.applyError(err)
	}
	return res, nil
}
