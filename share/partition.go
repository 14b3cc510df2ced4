package share

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// State is a record's state in a share partition.
type State uint8

// The states of a record in the window.
const (
	Available     State = iota // may be acquired
	Acquired                   // locked by one member until its deadline
	Acknowledged               // accepted: done
	Archived                   // rejected, a gap, or out of deliveries: done
	DeadLettering              // rejected or out of deliveries, to be appended to the dead-letter topic
	numStates
)

func (s State) String() string {
	switch s {
	case Available:
		return "available"
	case Acquired:
		return "acquired"
	case Acknowledged:
		return "acknowledged"
	case Archived:
		return "archived"
	case DeadLettering:
		return "dead-lettering"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

func (s State) done() bool { return s == Acknowledged || s == Archived }

// AckType is a member's answer for an acquired record, numbered as
// KIP-932's AcknowledgeTypes.
type AckType int8

// The acknowledgement types.
const (
	Gap     AckType = 0 // no record at this offset (a compaction hole): archived
	Accept  AckType = 1 // processed: acknowledged
	Release AckType = 2 // give it to a member again (archived at the limit)
	Reject  AckType = 3 // never deliver again: archived
	Renew   AckType = 4 // keep the lock for another lock duration
)

// Defaults of Config.
const (
	DefaultLockDurationMs = 30_000
	DefaultDeliveryLimit  = 5
	DefaultMaxInFlight    = 2000
	// DefaultBackoffBaseMs is 0: a released record is available again at
	// once, as KIP-932 specifies and Kafka clients expect.
	DefaultBackoffBaseMs = 0
	DefaultBackoffMaxMs  = 60_000
)

// Config is a share partition's settings (the group's configs).
type Config struct {
	LockDurationMs int64 // share.record.lock.duration.ms; default 30 s
	DeliveryLimit  int16 // share.delivery.attempt.limit; default 5
	MaxInFlight    int64 // the window's bound; default 2000
	// BackoffBaseMs is share.redelivery.backoff.base.ms: a record released
	// (by its member, its lock's expiry or its member's leaving) after its
	// n-th delivery is available again after a delay drawn uniformly from
	// [0, min(BackoffMaxMs, BackoffBaseMs * 2^(n-1))] (exponential backoff
	// with full jitter). 0, the default, makes it available at once.
	BackoffBaseMs int64
	// BackoffMaxMs is share.redelivery.backoff.max.ms, the cap of the
	// delay; default 60 s.
	BackoffMaxMs int64
	// DeadLetter makes a record rejected or out of deliveries
	// DeadLettering instead of Archived: the broker appends it to the
	// group's dead-letter topic, then calls DeadLettered.
	DeadLetter bool
	// KeyOrdering (share.key.ordering) hands out a record only when no
	// earlier record of the same key is in flight: acquired, or available
	// again (released, expired, waiting out its backoff). See ordering.go.
	KeyOrdering bool
}

func (c Config) withDefaults() Config {
	if c.LockDurationMs <= 0 {
		c.LockDurationMs = DefaultLockDurationMs
	}
	if c.DeliveryLimit <= 0 {
		c.DeliveryLimit = DefaultDeliveryLimit
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.BackoffBaseMs < 0 {
		c.BackoffBaseMs = DefaultBackoffBaseMs
	}
	if c.BackoffMaxMs <= 0 {
		c.BackoffMaxMs = DefaultBackoffMaxMs
	}
	return c
}

// Errors of Acknowledge and Decode.
var (
	// ErrInvalidRecordState: an acknowledgement names a record the member
	// does not hold (not acquired, acquired by another member, or its lock
	// expired). Kafka's INVALID_RECORD_STATE.
	ErrInvalidRecordState = errors.New("share: record not acquired by this member")
	// ErrInvalidAck: an acknowledgement batch is malformed (first past
	// last, overlapping batches, a type list of the wrong length, an
	// unknown type). Kafka's INVALID_REQUEST.
	ErrInvalidAck = errors.New("share: invalid acknowledgement")
	// ErrCorrupt: encoded state that does not describe a window.
	ErrCorrupt = errors.New("share: corrupt share partition state")
)

type record struct {
	state    State
	count    int16
	owner    string // while Acquired
	deadline int64  // while Acquired: Unix ms
	// while Available after a release: not acquired before this Unix ms
	// (its redelivery backoff); 0 once it has passed.
	availableAt int64
	seq         int32  // while DeadLettering: its dead-letter sequence (stored)
	reason      string // while DeadLettering: the member's last error
	key         keyOf  // the record's key, for KeyOrdering (not stored)
}

// Partition is one share partition's window. Not safe for concurrent use.
type Partition struct {
	cfg    Config
	start  int64
	recs   []record            // recs[i] is offset start+i; len(recs) == End-Start
	jitter func(n int64) int64 // uniform in [0, n]; nil: math/rand/v2
	// dlqNext is the dead-letter sequence the next record made
	// DeadLettering gets (stored).
	dlqNext int32
}

// New returns an empty window starting at start (the log offset the group
// starts from: the high watermark for share.auto.offset.reset=latest, the
// log start for earliest).
func New(start int64, cfg Config) *Partition {
	if start < 0 {
		start = 0
	}
	return &Partition{cfg: cfg.withDefaults(), start: start}
}

// Config returns the settings in force.
func (p *Partition) Config() Config { return p.cfg }

// SetConfig changes the settings; records in flight keep their locks and
// counts (a lowered limit archives each at its next release).
func (p *Partition) SetConfig(cfg Config) { p.cfg = cfg.withDefaults() }

// Start is the share-partition start offset: every offset below is done.
func (p *Partition) Start() int64 { return p.start }

// End is the first offset never acquired.
func (p *Partition) End() int64 { return p.start + int64(len(p.recs)) }

// Record returns the state and delivery count of offset o: below Start
// Acknowledged (done), at or past End Available with count 0.
func (p *Partition) Record(o int64) (State, int16) {
	switch {
	case o < p.start:
		return Acknowledged, 0
	case o >= p.End():
		return Available, 0
	}
	r := p.recs[o-p.start]
	return r.state, r.count
}

// Owner is the member holding offset o's lock and its deadline, "" when
// o is not acquired.
func (p *Partition) Owner(o int64) (member string, deadline int64) {
	if o < p.start || o >= p.End() || p.recs[o-p.start].state != Acquired {
		return "", 0
	}
	r := p.recs[o-p.start]
	return r.owner, r.deadline
}

// SetJitter replaces the random source of the redelivery backoff: f(n)
// returns an integer in [0, n]. Tests inject a deterministic one.
func (p *Partition) SetJitter(f func(n int64) int64) { p.jitter = f }

// backoff is the redelivery delay of a record released after its count-th
// delivery: full jitter over min(max, base * 2^(count-1)).
func (p *Partition) backoff(count int16) int64 {
	base, ceil := p.cfg.BackoffBaseMs, p.cfg.BackoffMaxMs
	if base <= 0 {
		return 0
	}
	d := base
	for i := int16(1); i < count && d < ceil; i++ {
		d *= 2
	}
	d = min(d, ceil)
	if p.jitter != nil {
		return min(max(p.jitter(d), 0), d)
	}
	return rand.Int64N(d + 1)
}

// release makes an acquired record available from at plus its backoff,
// or archives it at the delivery limit.
func (p *Partition) release(r *record, at int64) {
	r.owner, r.deadline = "", 0
	if r.count >= p.cfg.DeliveryLimit {
		p.finish(r, "")
		return
	}
	r.state = Available
	if d := p.backoff(r.count); d > 0 {
		r.availableAt = at + d
	}
}

// Backoff gives every available record already delivered a fresh
// redelivery backoff from now, as if its lock had just been lost. The
// broker calls it on a state it loads (a restart, a new leader): the
// backoffs and locks of the node that served the state before are not
// stored, and its records come back available.
func (p *Partition) Backoff(now int64) {
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Available && r.count > 0 {
			if d := p.backoff(r.count); d > 0 {
				r.availableAt = now + d
			}
		}
	}
}

// Expire releases every lock whose deadline is at or before now (its
// backoff counted from the deadline) and ends the backoffs that are over;
// it reports whether a lock was released.
func (p *Partition) Expire(now int64) bool {
	changed := false
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && r.deadline <= now {
			p.release(r, r.deadline)
			changed = true
		}
		if r.state == Available && r.availableAt != 0 && r.availableAt <= now {
			r.availableAt = 0
		}
	}
	if changed {
		p.advance()
	}
	return changed
}

// NextDeadline is the earliest lock deadline or end of a redelivery
// backoff in the window (when a record may become acquirable), 0 when
// there is none.
func (p *Partition) NextDeadline() int64 {
	var min int64
	for i := range p.recs {
		r := &p.recs[i]
		t := int64(0)
		switch {
		case r.state == Acquired:
			t = r.deadline
		case r.state == Available && r.availableAt != 0:
			t = r.availableAt
		}
		if t != 0 && (min == 0 || t < min) {
			min = t
		}
	}
	return min
}

// advance moves Start past the done records at the bottom of the window.
func (p *Partition) advance() {
	n := 0
	for n < len(p.recs) && p.recs[n].state.done() {
		n++
	}
	if n == 0 {
		return
	}
	p.start += int64(n)
	p.recs = p.recs[n:]
	if len(p.recs) == 0 || cap(p.recs) > 2*len(p.recs)+64 {
		// Let the dropped prefix be collected.
		p.recs = append([]record(nil), p.recs...)
	}
}

// AdvanceStart moves the window's start to logStart when the log's start
// passed it (retention or DeleteRecords): offsets below it are gone and
// done; it reports whether the window changed.
func (p *Partition) AdvanceStart(logStart int64) bool {
	if logStart <= p.start {
		return false
	}
	if logStart >= p.End() {
		p.start, p.recs = logStart, nil
		return true
	}
	p.recs = append([]record(nil), p.recs[logStart-p.start:]...)
	p.start = logStart
	p.advance()
	return true
}

// Clone returns an independent copy (locks included): the broker applies
// an operation to a clone, makes the clone's state durable, and only then
// puts it in place, so a failed write changes nothing.
func (p *Partition) Clone() *Partition {
	q := *p
	q.recs = append([]record(nil), p.recs...)
	return &q
}
