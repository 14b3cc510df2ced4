package groups

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"
)

func tp(topic string, p int32) TopicPartition { return TopicPartition{topic, p} }

func sub(id string, topics ...string) MemberSubscription {
	return MemberSubscription{MemberID: id, Subscription: Subscription{Topics: topics, Generation: -1}}
}

func owning(m MemberSubscription, gen int32, owned ...TopicPartition) MemberSubscription {
	m.Owned, m.Generation = owned, gen
	return m
}

func TestRangeAssign(t *testing.T) {
	tests := []struct {
		name       string
		members    []MemberSubscription
		partitions map[string]int32
		want       map[string][]TopicPartition
	}{
		{"no members", nil, map[string]int32{"a": 3}, map[string][]TopicPartition{}},
		{"extra to the first", []MemberSubscription{sub("m1", "a"), sub("m2", "a")}, map[string]int32{"a": 3},
			map[string][]TopicPartition{"m1": {tp("a", 0), tp("a", 1)}, "m2": {tp("a", 2)}}},
		{"per topic: the first gets both extras", []MemberSubscription{sub("m1", "a", "b"), sub("m2", "a", "b")},
			map[string]int32{"a": 3, "b": 1},
			map[string][]TopicPartition{"m1": {tp("a", 0), tp("a", 1), tp("b", 0)}, "m2": {tp("a", 2)}}},
		{"only subscribers", []MemberSubscription{sub("m1", "a"), sub("m2", "b")}, map[string]int32{"a": 2, "b": 1},
			map[string][]TopicPartition{"m1": {tp("a", 0), tp("a", 1)}, "m2": {tp("b", 0)}}},
		{"more members than partitions", []MemberSubscription{sub("m1", "a"), sub("m2", "a"), sub("m3", "a")},
			map[string]int32{"a": 2}, map[string][]TopicPartition{"m1": {tp("a", 0)}, "m2": {tp("a", 1)}, "m3": nil}},
		{"missing topic", []MemberSubscription{sub("m1", "gone")}, map[string]int32{"gone": 0},
			map[string][]TopicPartition{"m1": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Range{}).Assign(tt.members, tt.partitions); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRoundRobinAssign(t *testing.T) {
	tests := []struct {
		name       string
		members    []MemberSubscription
		partitions map[string]int32
		want       map[string][]TopicPartition
	}{
		{"dealt across topics", []MemberSubscription{sub("m1", "a", "b"), sub("m2", "a", "b")},
			map[string]int32{"a": 3, "b": 1},
			map[string][]TopicPartition{"m1": {tp("a", 0), tp("a", 2)}, "m2": {tp("a", 1), tp("b", 0)}}},
		{"skips non-subscribers", []MemberSubscription{sub("m1", "a"), sub("m2", "b"), sub("m3", "a", "b")},
			map[string]int32{"a": 3, "b": 2},
			// Kafka's order: a1 skips m2 to m3, so b0 falls to m2.
			map[string][]TopicPartition{"m1": {tp("a", 0), tp("a", 2)}, "m2": {tp("b", 0)}, "m3": {tp("a", 1), tp("b", 1)}}},
		{"nobody subscribes", []MemberSubscription{sub("m1", "a")}, map[string]int32{"a": 1, "b": 2},
			map[string][]TopicPartition{"m1": {tp("a", 0)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (RoundRobin{}).Assign(tt.members, tt.partitions); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCooperativeStickyAssign(t *testing.T) {
	a6 := map[string]int32{"a": 6}
	tests := []struct {
		name    string
		members []MemberSubscription
		want    map[string][]TopicPartition
	}{
		{"fresh group balanced", []MemberSubscription{sub("m1", "a"), sub("m2", "a"), sub("m3", "a")},
			map[string][]TopicPartition{"m1": {tp("a", 0), tp("a", 3)}, "m2": {tp("a", 1), tp("a", 4)}, "m3": {tp("a", 2), tp("a", 5)}}},
		{"owned partitions stay", []MemberSubscription{
			owning(sub("m1", "a"), 3, tp("a", 4), tp("a", 5)),
			owning(sub("m2", "a"), 3, tp("a", 0), tp("a", 1)),
			owning(sub("m3", "a"), 3, tp("a", 2), tp("a", 3))},
			map[string][]TopicPartition{"m1": {tp("a", 4), tp("a", 5)}, "m2": {tp("a", 0), tp("a", 1)}, "m3": {tp("a", 2), tp("a", 3)}}},
		{"a joiner: moved partitions withheld", []MemberSubscription{
			owning(sub("m1", "a"), 3, tp("a", 0), tp("a", 1), tp("a", 2)),
			owning(sub("m2", "a"), 3, tp("a", 3), tp("a", 4), tp("a", 5)),
			sub("m3", "a")},
			map[string][]TopicPartition{"m1": {tp("a", 1), tp("a", 2)}, "m2": {tp("a", 4), tp("a", 5)}, "m3": nil}},
		{"a leaver: its partitions shared, nothing revoked", []MemberSubscription{
			owning(sub("m1", "a"), 3, tp("a", 0), tp("a", 1)),
			owning(sub("m3", "a"), 3, tp("a", 4), tp("a", 5))},
			map[string][]TopicPartition{"m1": {tp("a", 0), tp("a", 1), tp("a", 2)}, "m3": {tp("a", 3), tp("a", 4), tp("a", 5)}}},
		{"conflicting claims: the newer generation keeps", []MemberSubscription{
			owning(sub("m1", "a"), 2, tp("a", 0)),
			owning(sub("m2", "a"), 5, tp("a", 0))},
			map[string][]TopicPartition{"m1": {tp("a", 1), tp("a", 2), tp("a", 4)}, "m2": {tp("a", 0), tp("a", 3), tp("a", 5)}}},
		{"claims on unsubscribed or missing partitions ignored", []MemberSubscription{
			owning(sub("m1", "a"), 2, tp("b", 0), tp("a", 9), tp("a", -1))},
			map[string][]TopicPartition{"m1": {tp("a", 0), tp("a", 1), tp("a", 2), tp("a", 3), tp("a", 4), tp("a", 5)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (CooperativeSticky{}).Assign(tt.members, a6); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// randomGroup makes a group of 1-8 members over 1-3 topics of 0-12
// partitions; with equal set, every member subscribes to every topic.
func randomGroup(r *rand.Rand, equal bool) ([]MemberSubscription, map[string]int32) {
	partitions := make(map[string]int32)
	var topics []string
	for i := 0; i < 1+r.Intn(3); i++ {
		t := fmt.Sprintf("t%d", i)
		topics = append(topics, t)
		partitions[t] = int32(r.Intn(13))
	}
	var members []MemberSubscription
	for i := 0; i < 1+r.Intn(8); i++ {
		m := sub(fmt.Sprintf("m%02d", i), topics...)
		if !equal {
			m.Topics = nil
			for _, t := range topics {
				if r.Intn(2) == 0 {
					m.Topics = append(m.Topics, t)
				}
			}
		}
		members = append(members, m)
	}
	return members, partitions
}

// checkExactlyOnce fails unless every partition of a subscribed topic is
// assigned to exactly one of its subscribers.
func checkExactlyOnce(t *testing.T, members []MemberSubscription, partitions map[string]int32, got map[string][]TopicPartition) {
	t.Helper()
	holder := make(map[TopicPartition]string)
	subs := make(map[string]Subscription)
	for _, m := range members {
		subs[m.MemberID] = m.Subscription
	}
	for id, tps := range got {
		for _, p := range tps {
			if o, dup := holder[p]; dup {
				t.Fatalf("%v assigned to %s and %s", p, o, id)
			}
			if !subscribes(subs[id], p.Topic) || p.Partition >= partitions[p.Topic] {
				t.Fatalf("%v assigned to %s, which does not subscribe to it or it does not exist", p, id)
			}
			holder[p] = id
		}
	}
	for _, p := range allPartitions(partitions) {
		if _, ok := holder[p]; !ok {
			for _, m := range members {
				if subscribes(m.Subscription, p.Topic) {
					t.Fatalf("%v has subscribers but was not assigned: %v", p, got)
				}
			}
		}
	}
}

func spread(got map[string][]TopicPartition) int {
	lo, hi := -1, 0
	for _, tps := range got {
		if lo < 0 || len(tps) < lo {
			lo = len(tps)
		}
		if len(tps) > hi {
			hi = len(tps)
		}
	}
	return hi - lo
}

func TestAssignorProperties(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 1000; i++ {
		members, partitions := randomGroup(r, i%2 == 0)
		for _, a := range []Assignor{Range{}, RoundRobin{}, CooperativeSticky{}} {
			got := a.Assign(members, partitions)
			if len(got) != len(members) {
				t.Fatalf("%s: %d members, %d entries", a.Name(), len(members), len(got))
			}
			checkExactlyOnce(t, members, partitions, got)
			if i%2 == 0 && a.Name() != RangeAssignorName && spread(got) > 1 {
				t.Fatalf("%s: equal subscriptions, counts differ by %d: %v", a.Name(), spread(got), got)
			}
			if i%2 == 0 && a.Name() == RangeAssignorName {
				for topic := range partitions {
					perTopic := make(map[string][]TopicPartition)
					for id, tps := range got {
						perTopic[id] = nil
						for _, p := range tps {
							if p.Topic == topic {
								perTopic[id] = append(perTopic[id], p)
							}
						}
					}
					if spread(perTopic) > 1 {
						t.Fatalf("range: topic %s counts differ by %d", topic, spread(perTopic))
					}
				}
			}
			if again := a.Assign(members, partitions); !reflect.DeepEqual(got, again) {
				t.Fatalf("%s is not deterministic", a.Name())
			}
		}
	}
}

// withOwned gives each member its partitions of prev as owned, at gen.
func withOwned(members []MemberSubscription, prev map[string][]TopicPartition, gen int32) []MemberSubscription {
	out := make([]MemberSubscription, len(members))
	for i, m := range members {
		m.Owned = append([]TopicPartition(nil), prev[m.MemberID]...)
		m.Generation = gen
		out[i] = m
	}
	return out
}

// minMoves is the fewest owned partitions any balanced assignment of n
// partitions over members with these owned counts must take away: the
// largest owners get the n mod m larger shares.
func minMoves(owned []int, n int) int {
	sort.Sort(sort.Reverse(sort.IntSlice(owned)))
	m := len(owned)
	moves := 0
	for i, c := range owned {
		quota := n / m
		if i < n%m {
			quota++
		}
		if c > quota {
			moves += c - quota
		}
	}
	return moves
}

// TestCooperativeStickyProperties runs random membership changes on a group
// with equal subscriptions through the two-phase protocol and checks, at
// each step: at most one member per partition, nothing that stays is
// revoked, the fewest possible partitions move, and after the follow-up
// generation every partition is assigned once and counts differ by at most
// one.
func TestCooperativeStickyProperties(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for run := 0; run < 150; run++ {
		partitions := map[string]int32{"a": int32(r.Intn(20)), "b": int32(r.Intn(5))}
		n := int(partitions["a"] + partitions["b"])
		var members []MemberSubscription
		prev := map[string][]TopicPartition{}
		next := 0
		for step := int32(1); step < 15; step++ {
			members = mutateMembers(r, members, &next)
			owned := withOwned(members, prev, step)
			counts := make([]int, 0, len(owned))
			for _, m := range owned {
				counts = append(counts, len(m.Owned))
			}
			got := CooperativeSticky{}.Assign(owned, partitions)
			revoked := 0
			for _, m := range owned {
				kept := make(map[TopicPartition]bool)
				for _, p := range got[m.MemberID] {
					kept[p] = true
				}
				for _, p := range m.Owned {
					if !kept[p] {
						revoked++
					}
				}
			}
			if len(members) > 0 {
				if want := minMoves(counts, n); revoked != want {
					t.Fatalf("run %d step %d: revoked %d partitions, the least is %d (owned %v, got %v)", run, step, revoked, want, counts, got)
				}
			}
			// Phase two: members re-join owning what they kept.
			final := CooperativeSticky{}.Assign(withOwned(members, got, step), partitions)
			checkExactlyOnce(t, members, partitions, final)
			if len(members) > 0 && spread(final) > 1 {
				t.Fatalf("run %d step %d: counts differ by %d: %v", run, step, spread(final), final)
			}
			for id, tps := range got {
				for _, p := range tps {
					if !containsTP(final[id], p) {
						t.Fatalf("run %d step %d: %v kept by %s in phase one, revoked in phase two", run, step, p, id)
					}
				}
			}
			prev = final
		}
	}
}

// mutateMembers adds or removes one or two members.
func mutateMembers(r *rand.Rand, members []MemberSubscription, next *int) []MemberSubscription {
	for k := 0; k < 1+r.Intn(2); k++ {
		if len(members) > 0 && r.Intn(3) == 0 {
			i := r.Intn(len(members))
			members = append(members[:i:i], members[i+1:]...)
			continue
		}
		members = append(members, sub(fmt.Sprintf("m%03d", *next), "a", "b"))
		*next++
	}
	sort.Slice(members, func(i, j int) bool { return members[i].MemberID < members[j].MemberID })
	return members
}

func containsTP(tps []TopicPartition, p TopicPartition) bool {
	for _, x := range tps {
		if x == p {
			return true
		}
	}
	return false
}

func TestConsumerProtocolRoundTrip(t *testing.T) {
	s := Subscription{Topics: []string{"b", "a"}, Owned: []TopicPartition{tp("b", 1), tp("a", 2), tp("a", 0)}, Generation: 7, UserData: []byte("u")}
	got, err := DecodeSubscription(EncodeSubscription(s))
	if err != nil {
		t.Fatal(err)
	}
	want := s
	want.Owned = []TopicPartition{tp("a", 0), tp("a", 2), tp("b", 1)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	tps, err := DecodeAssignment(EncodeAssignment(s.Owned))
	if err != nil || !reflect.DeepEqual(tps, want.Owned) {
		t.Fatalf("assignment round trip: %v, %v", tps, err)
	}
	if tps, err := DecodeAssignment(nil); tps != nil || err != nil {
		t.Fatalf("empty assignment: %v, %v", tps, err)
	}
	if _, err := DecodeSubscription([]byte{0, 1, 0}); err == nil {
		t.Fatal("a truncated subscription decoded")
	}
}

func FuzzDecodeSubscription(f *testing.F) {
	f.Add(EncodeSubscription(Subscription{Topics: []string{"a"}, Owned: []TopicPartition{tp("a", 1)}}))
	f.Add(EncodeAssignment([]TopicPartition{tp("a", 1)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeSubscription(b)
		_, _ = DecodeAssignment(b)
	})
}
