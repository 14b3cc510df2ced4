package torture

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// OpKind is what an operation did.
type OpKind string

const (
	// OpProduce appends one record (Producer, Key, Seq; Value is their
	// encoding). On success Partition and Offset are where it landed.
	OpProduce OpKind = "produce"
	// OpRead read Partition from offset From: Records at From, From+1, ...,
	// and the reader's position moved to Next. Final marks the read of every
	// partition to its end after the nemeses stopped.
	OpRead OpKind = "read"
	// OpCommit committed Offset as Group's position of Partition.
	OpCommit OpKind = "commit"
	// OpReset explicitly reset Group's committed offset of Partition to
	// Offset.
	OpReset OpKind = "reset"
	// OpObserve read Group's committed offset of Partition: Offset, or -1
	// when none.
	OpObserve OpKind = "observe"
	// OpSeekTime resolved TimeMs to Offset in Partition (the first offset
	// whose timestamp is >= TimeMs); HighWatermark came with the answer.
	OpSeekTime OpKind = "seek-time"
	// OpAssign: Member of Group holds Partitions in Generation from now
	// until its next OpAssign (what the member reported after a join; none
	// once it left or the coordinator forgot it).
	OpAssign OpKind = "assign"
	// OpMemberCommit: Member of Group committed Offset as the position of
	// Partition, naming Generation. Its outcome is unknown when it was the
	// member's own commit during a rebalance (the client hides its result).
	OpMemberCommit OpKind = "member-commit"
	// OpMemberObserve read Group's committed offset of Partition (Offset,
	// -1 when none) while the group was in Generation (-1: the generation
	// changed during the read, or was not learnt).
	OpMemberObserve OpKind = "member-observe"
)

// Outcome is what the client learnt of an operation.
type Outcome string

const (
	OutcomeOK Outcome = "ok"
	// OutcomeFail: the operation definitely did not take effect.
	OutcomeFail Outcome = "fail"
	// OutcomeUnknown: it may or may not have taken effect.
	OutcomeUnknown Outcome = "unknown"
)

// Op is one operation of a History. Times are nanoseconds since the history
// began; Complete >= Invoke. Fields not used by Kind are zero.
type Op struct {
	ID       int     `json:"id"`
	Process  int     `json:"process"` // the client that ran it
	Kind     OpKind  `json:"kind"`
	Invoke   int64   `json:"invoke_ns"`
	Complete int64   `json:"complete_ns"`
	Outcome  Outcome `json:"outcome"`
	Err      string  `json:"err,omitempty"`

	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Producer  int    `json:"producer,omitempty"`
	Key       string `json:"key,omitempty"`
	Seq       int64  `json:"seq,omitempty"`
	Value     string `json:"value,omitempty"`
	// Duplicate: the server answered the produce as a retry of a batch it
	// had already appended (the idempotent producer at work).
	Duplicate bool `json:"duplicate,omitempty"`

	From    int64        `json:"from,omitempty"`
	Next    int64        `json:"next,omitempty"`
	Records []ReadRecord `json:"records,omitempty"`
	Final   bool         `json:"final,omitempty"`

	Group string `json:"group,omitempty"`
	// Member and Generation: a group member's id and generation (reads,
	// assignments and commits of group members).
	Member     string  `json:"member,omitempty"`
	Generation int32   `json:"generation,omitempty"`
	Partitions []int32 `json:"partitions,omitempty"`

	TimeMs        int64 `json:"time_ms,omitempty"`
	HighWatermark int64 `json:"hw,omitempty"`
}

// ReadRecord is one record a read returned.
type ReadRecord struct {
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`
	Timestamp int64  `json:"ts,omitempty"` // ms, as produced
}

// Acked reports whether op is a produce the server acknowledged.
func (op *Op) Acked() bool { return op.Kind == OpProduce && op.Outcome == OutcomeOK }

func (op Op) String() string {
	t := fmt.Sprintf("[%s %s]", time.Duration(op.Invoke), time.Duration(op.Complete))
	res := string(op.Outcome)
	if op.Err != "" {
		res += " (" + op.Err + ")"
	}
	switch op.Kind {
	case OpProduce:
		if op.Outcome == OutcomeOK {
			res = fmt.Sprintf("ok %d/%d", op.Partition, op.Offset)
		}
		return fmt.Sprintf("#%d %s p%d produce %s -> %s", op.ID, t, op.Process, op.Value, res)
	case OpRead:
		final := ""
		if op.Final {
			final = " final"
		}
		recs := ""
		for i, r := range op.Records {
			if i == 4 && len(op.Records) > 6 {
				recs += fmt.Sprintf(" ...(%d more)", len(op.Records)-5)
				r = op.Records[len(op.Records)-1]
			}
			recs += fmt.Sprintf(" %d:%s", r.Offset, r.Value)
			if i == 4 && len(op.Records) > 6 {
				break
			}
		}
		return fmt.Sprintf("#%d %s p%d read%s %d@%d -> %s next %d [%s]", op.ID, t, op.Process, final, op.Partition, op.From, res, op.Next, recs)
	case OpSeekTime:
		return fmt.Sprintf("#%d %s p%d seek-time %d to %d -> %s %d (high watermark %d)", op.ID, t, op.Process, op.Partition, op.TimeMs, res, op.Offset, op.HighWatermark)
	case OpAssign:
		return fmt.Sprintf("#%d %s p%d assign group %s member %s generation %d partitions %v", op.ID, t, op.Process, op.Group, op.Member, op.Generation, op.Partitions)
	case OpMemberCommit, OpMemberObserve:
		return fmt.Sprintf("#%d %s p%d %s group %s member %s generation %d %d@%d -> %s", op.ID, t, op.Process, op.Kind, op.Group, op.Member, op.Generation, op.Partition, op.Offset, res)
	default:
		return fmt.Sprintf("#%d %s p%d %s group %s %d@%d -> %s", op.ID, t, op.Process, op.Kind, op.Group, op.Partition, op.Offset, res)
	}
}

// Fault is one nemesis action: a node killed, restarted, paused or resumed.
type Fault struct {
	Kind  string `json:"kind"` // "kill", "restart", "pause", "resume", "tamper"
	Node  int    `json:"node"`
	Start int64  `json:"start_ns"`
	End   int64  `json:"end_ns"`
	Err   string `json:"err,omitempty"`
	// Detail says more of the fault: a partition's components.
	Detail string `json:"detail,omitempty"`
}

func (f Fault) String() string {
	s := fmt.Sprintf("[%s %s] %s node %d", time.Duration(f.Start), time.Duration(f.End), f.Kind, f.Node)
	if f.Detail != "" {
		s += " (" + f.Detail + ")"
	}
	if f.Err != "" {
		s += ": " + f.Err
	}
	return s
}

// History records operations and faults from many goroutines. The zero
// value is not usable: call NewHistory.
type History struct {
	start time.Time

	mu     sync.Mutex
	ops    []Op
	faults []Fault
}

// NewHistory starts a history now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the time since the history began, in nanoseconds (monotonic).
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records a completed operation and returns its ID.
func (h *History) Add(op Op) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	op.ID = len(h.ops)
	h.ops = append(h.ops, op)
	return op.ID
}

// AddFault records a nemesis action.
func (h *History) AddFault(f Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, f)
}

// Ops returns a copy of the operations, in the order they were added.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// Faults returns a copy of the faults.
func (h *History) Faults() []Fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.faults)
}

// WriteJSON writes the operations and faults as one JSON document.
func (h *History) WriteJSON(w io.Writer) error {
	doc := struct {
		Ops    []Op    `json:"ops"`
		Faults []Fault `json:"faults"`
	}{h.Ops(), h.Faults()}
	enc := json.NewEncoder(w)
	return enc.Encode(doc)
}

// byInvoke sorts ops by invocation time, then ID.
func byInvoke(a, b Op) int {
	if a.Invoke != b.Invoke {
		if a.Invoke < b.Invoke {
			return -1
		}
		return 1
	}
	return a.ID - b.ID
}
