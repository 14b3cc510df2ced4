package groups

import (
	"fmt"
	"sort"
)

// Protocol names of the server-side assignors. They are Kafka's names, so a
// group that mixes logd clients and Kafka clients agrees on one.
const (
	RangeAssignorName             = "range"
	RoundRobinAssignorName        = "roundrobin"
	CooperativeStickyAssignorName = "cooperative-sticky"
	// DefaultAssignorName is what logd's own clients ask for by default.
	DefaultAssignorName = CooperativeStickyAssignorName
)

// Assignor computes a generation's assignment on the server, for groups whose
// leader asked for it (JoinRequest.ServerAssign).
type Assignor interface {
	// Name is the protocol name members put in JoinRequest.Protocols.
	Name() string
	// Assign gives partitions to members. members are sorted by member id;
	// partitions holds the partition count of every topic some member
	// subscribes to (0 when the topic does not exist). The result maps every
	// member id to its partitions (possibly none). It must be deterministic:
	// the same input gives the same assignment.
	Assign(members []MemberSubscription, partitions map[string]int32) map[string][]TopicPartition
}

// MemberSubscription is a member's decoded subscription, the input of an
// Assignor.
type MemberSubscription struct {
	MemberID string
	Subscription
}

// DefaultAssignors returns one of each server-side assignor, the default
// (cooperative-sticky) first.
func DefaultAssignors() []Assignor {
	return []Assignor{CooperativeSticky{}, Range{}, RoundRobin{}}
}

// AssignorName normalizes a user-given assignor name: "round-robin" (the
// spelling logd's CLI documents) is Kafka's "roundrobin".
func AssignorName(name string) string {
	if name == "round-robin" {
		return RoundRobinAssignorName
	}
	return name
}

func findAssignor(assignors []Assignor, name string) (Assignor, error) {
	for _, a := range assignors {
		if a.Name() == name {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownAssignor, name)
}

// newAssignment returns an assignment with an entry for every member, so a
// member without partitions still gets an (empty) assignment.
func newAssignment(members []MemberSubscription) map[string][]TopicPartition {
	out := make(map[string][]TopicPartition, len(members))
	for _, m := range members {
		out[m.MemberID] = nil
	}
	return out
}

// sortedTopics returns the topics of partitions in name order.
func sortedTopics(partitions map[string]int32) []string {
	topics := make([]string, 0, len(partitions))
	for t := range partitions {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	return topics
}

// allPartitions lists every partition of partitions, sorted.
func allPartitions(partitions map[string]int32) []TopicPartition {
	var out []TopicPartition
	for _, t := range sortedTopics(partitions) {
		for p := int32(0); p < partitions[t]; p++ {
			out = append(out, TopicPartition{t, p})
		}
	}
	return out
}

func subscribes(s Subscription, topic string) bool {
	for _, t := range s.Topics {
		if t == topic {
			return true
		}
	}
	return false
}
