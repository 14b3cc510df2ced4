package txn

import (
	"regexp"
	"slices"
	"time"
)

// kafkaOnlyStates are Kafka's transaction states that a record here never
// has (an expiring id, KIP-890's epoch fence): a filter may name them,
// and they match nothing.
var kafkaOnlyStates = []string{"Dead", "PrepareEpochFence"}

// ParseState is the state of Kafka's name (State.String); ok is false
// for any other name.
func ParseState(name string) (State, bool) {
	i := slices.Index(stateNames[:], name)
	return State(i), i >= 0
}

// KnownState reports whether name is one of Kafka's transaction states:
// a ListTransactions state filter naming another is answered as unknown.
func KnownState(name string) bool {
	_, ok := ParseState(name)
	return ok || slices.Contains(kafkaOnlyStates, name)
}

// Filter selects records for a listing (Kafka's ListTransactions): an
// empty States, ProducerIDs or IDPattern selects every record, and so
// does a negative MinDuration (AnyDuration).
type Filter struct {
	// States are state names (Kafka's): the record's state is one of them.
	States []string
	// ProducerIDs: the record's producer id is one of them.
	ProducerIDs []int64
	// MinDuration, when 0 or more (0 is a filter too), keeps the records whose transaction
	// started more than MinDuration before now (Kafka's duration filter:
	// a record whose transaction never started has no start time and is
	// kept).
	MinDuration time.Duration
	// IDPattern, when not nil, matches the transactional id
	// (CompileIDPattern).
	IDPattern *regexp.Regexp
}

// AnyDuration is a Filter's MinDuration that keeps every record.
const AnyDuration time.Duration = -1

// StartTime is when r's transaction started, in Unix milliseconds, or -1
// when none has (Kafka's start timestamp of an id that never began one).
func (r Record) StartTime() int64 {
	if r.StartMs == 0 {
		return -1
	}
	return r.StartMs
}

// Match reports whether f selects r at nowMs (Unix milliseconds).
func (f Filter) Match(r Record, nowMs int64) bool {
	if len(f.States) > 0 && !slices.Contains(f.States, r.State.String()) {
		return false
	}
	if len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, r.ProducerID) {
		return false
	}
	if f.MinDuration >= 0 && nowMs-r.StartTime() <= f.MinDuration.Milliseconds() {
		return false
	}
	return f.IDPattern == nil || f.IDPattern.MatchString(r.ID)
}

// CompileIDPattern compiles a ListTransactions pattern (RE2 syntax) to
// match whole transactional ids, as Kafka's (Java's Matcher.matches).
func CompileIDPattern(pattern string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + pattern + `)$`)
}
