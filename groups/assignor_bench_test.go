package groups

import (
	"fmt"
	"testing"
)

// BenchmarkCooperativeSticky: a 100-member group over 1,000 partitions in
// which one member joins (the assignment runs under the coordinator's
// lock, so this is how long a rebalance holds it).
func BenchmarkCooperativeSticky(b *testing.B) {
	partitions := map[string]int32{"a": 500, "b": 500}
	var members []MemberSubscription
	for i := 0; i < 100; i++ {
		members = append(members, sub(fmt.Sprintf("m%03d", i), "a", "b"))
	}
	prev := CooperativeSticky{}.Assign(members, partitions)
	members = append(withOwned(members, prev, 1), sub("m999", "a", "b"))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		CooperativeSticky{}.Assign(members, partitions)
	}
}
