package groups

// RoundRobin is Kafka's RoundRobinAssignor: every partition of every
// subscribed topic, sorted by topic and partition, is dealt in turn to the
// members sorted by id, skipping members that do not subscribe to its topic.
// With equal subscriptions the counts differ by at most one.
type RoundRobin struct{}

// Name is "roundrobin".
func (RoundRobin) Name() string { return RoundRobinAssignorName }

// Assign implements Assignor.
func (RoundRobin) Assign(members []MemberSubscription, partitions map[string]int32) map[string][]TopicPartition {
	out := newAssignment(members)
	if len(members) == 0 {
		return out
	}
	next := 0
	for _, tp := range allPartitions(partitions) {
		// At most one full turn: a topic nobody subscribes to is skipped.
		for tries := 0; tries < len(members); tries++ {
			m := members[next]
			next = (next + 1) % len(members)
			if subscribes(m.Subscription, tp.Topic) {
				out[m.MemberID] = append(out[m.MemberID], tp)
				break
			}
		}
	}
	return out
}
