package groups

import "sort"

// CooperativeSticky is Kafka's CooperativeStickyAssignor (KIP-429), the
// default for logd's clients. It computes a balanced target that keeps as
// many owned partitions where they are as balance allows, then withholds
// every partition the target moves: in this generation it goes to nobody,
// its old owner sees it gone and revokes it, and the re-join that follows
// gives it to its new member. A partition that stays is never revoked.
//
// Owned partitions come from the members' subscriptions. A claim is ignored
// when the member no longer subscribes to the topic or the partition no
// longer exists; when two members claim one partition, the claim from the
// higher generation wins, and on a tie the member with the smaller id.
//
// With equal subscriptions the target's counts differ by at most one and the
// number of moved partitions is the least any balanced assignment needs.
// With unequal subscriptions it is balanced greedily (no member can take a
// partition from one holding two more than it), which Kafka's general
// algorithm also only approximates.
type CooperativeSticky struct{}

// Name is "cooperative-sticky".
func (CooperativeSticky) Name() string { return CooperativeStickyAssignorName }

// Assign implements Assignor.
func (CooperativeSticky) Assign(members []MemberSubscription, partitions map[string]int32) map[string][]TopicPartition {
	owners := validOwners(members, partitions)
	target := stickyTarget(members, partitions, owners)
	// The cooperative step: a partition whose owner changes is withheld.
	out := newAssignment(members)
	for id, tps := range target {
		for _, tp := range tps {
			if o, ok := owners[tp]; !ok || o == id {
				out[id] = append(out[id], tp)
			}
		}
	}
	return out
}

// validOwners returns, per partition, the member whose ownership claim
// stands (see CooperativeSticky).
func validOwners(members []MemberSubscription, partitions map[string]int32) map[TopicPartition]string {
	owners := make(map[TopicPartition]string)
	gen := make(map[TopicPartition]int32)
	for _, m := range members { // sorted by id: on a tie the first keeps
		for _, tp := range m.Owned {
			if tp.Partition < 0 || tp.Partition >= partitions[tp.Topic] || !subscribes(m.Subscription, tp.Topic) {
				continue
			}
			if o, ok := owners[tp]; ok && (o == m.MemberID || gen[tp] >= m.Generation) {
				continue
			}
			owners[tp], gen[tp] = m.MemberID, m.Generation
		}
	}
	return owners
}

// stickyPlan is the target under construction.
type stickyPlan struct {
	members []MemberSubscription // sorted by id
	owners  map[TopicPartition]string
	assign  map[string]map[TopicPartition]bool
}

// stickyTarget is the balanced assignment before the cooperative step:
// every partition of a subscribed topic goes to exactly one subscriber.
func stickyTarget(members []MemberSubscription, partitions map[string]int32, owners map[TopicPartition]string) map[string][]TopicPartition {
	p := &stickyPlan{members: members, owners: owners, assign: make(map[string]map[TopicPartition]bool)}
	for _, m := range members {
		p.assign[m.MemberID] = make(map[TopicPartition]bool)
	}
	var free []TopicPartition
	for _, tp := range allPartitions(partitions) {
		if o, ok := owners[tp]; ok {
			p.assign[o][tp] = true
		} else {
			free = append(free, tp)
		}
	}
	p.placeFree(free)
	p.balance()
	out := newAssignment(members)
	for id, set := range p.assign {
		for tp := range set {
			out[id] = append(out[id], tp)
		}
		sortPartitions(out[id])
	}
	return out
}

// placeFree gives each unowned partition to its least loaded subscriber,
// the partitions with the fewest candidates first so that they are not
// crowded out.
func (p *stickyPlan) placeFree(free []TopicPartition) {
	candidates := make(map[string]int)
	for _, tp := range free {
		if _, ok := candidates[tp.Topic]; !ok {
			for _, m := range p.members {
				if subscribes(m.Subscription, tp.Topic) {
					candidates[tp.Topic]++
				}
			}
		}
	}
	sort.SliceStable(free, func(i, j int) bool { return candidates[free[i].Topic] < candidates[free[j].Topic] })
	for _, tp := range free {
		if to := p.leastLoaded(tp.Topic); to != "" {
			p.assign[to][tp] = true
		}
	}
}

// balance moves partitions from the most to the least loaded members until
// no subscriber of a partition holds two fewer than its holder. Each move
// lowers the sum of squared counts, so it ends; it prefers moving a
// partition its holder did not own (no revocation) over one it did.
func (p *stickyPlan) balance() {
	for p.moveOne() {
	}
}

func (p *stickyPlan) moveOne() bool {
	byLoad := make([]string, 0, len(p.members))
	for _, m := range p.members {
		byLoad = append(byLoad, m.MemberID)
	}
	sort.SliceStable(byLoad, func(i, j int) bool { return len(p.assign[byLoad[i]]) > len(p.assign[byLoad[j]]) })
	for _, from := range byLoad {
		for _, tp := range p.movable(from) {
			to := p.leastLoaded(tp.Topic)
			if to != "" && len(p.assign[to])+1 < len(p.assign[from]) {
				delete(p.assign[from], tp)
				p.assign[to][tp] = true
				return true
			}
		}
	}
	return false
}

// movable lists from's partitions, those it did not own first, each group
// sorted so the plan is deterministic.
func (p *stickyPlan) movable(from string) []TopicPartition {
	var fresh, owned []TopicPartition
	for tp := range p.assign[from] {
		if p.owners[tp] == from {
			owned = append(owned, tp)
		} else {
			fresh = append(fresh, tp)
		}
	}
	sortPartitions(fresh)
	sortPartitions(owned)
	return append(fresh, owned...)
}

// leastLoaded returns the subscriber of topic with the fewest partitions
// (the smallest id on a tie), or "" when nobody subscribes.
func (p *stickyPlan) leastLoaded(topic string) string {
	best := ""
	for _, m := range p.members {
		if !subscribes(m.Subscription, topic) {
			continue
		}
		if best == "" || len(p.assign[m.MemberID]) < len(p.assign[best]) {
			best = m.MemberID
		}
	}
	return best
}
