package groups

// Range is Kafka's RangeAssignor: per topic, the topic's subscribers (sorted
// by member id) get consecutive ranges of partitions, the first N mod M
// members one more. Balance holds per topic, not across topics: with many
// topics the first members get the extra partition of each.
type Range struct{}

// Name is "range".
func (Range) Name() string { return RangeAssignorName }

// Assign implements Assignor.
func (Range) Assign(members []MemberSubscription, partitions map[string]int32) map[string][]TopicPartition {
	out := newAssignment(members)
	for _, topic := range sortedTopics(partitions) {
		var subs []string
		for _, m := range members {
			if subscribes(m.Subscription, topic) {
				subs = append(subs, m.MemberID)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n, m := int(partitions[topic]), len(subs)
		p := int32(0)
		for i, id := range subs {
			count := n / m
			if i < n%m {
				count++
			}
			for k := 0; k < count; k++ {
				out[id] = append(out[id], TopicPartition{topic, p})
				p++
			}
		}
	}
	return out
}
