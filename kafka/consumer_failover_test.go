package kafka

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Consume848AcrossMove has two franz-go KIP-848 consumers read topic (6
// partitions) as group, calls move (which moves the group coordinator:
// the cluster test stops the metadata leader), and has them read on: the
// members keep their member ids (franz-go makes a new one on
// UNKNOWN_MEMBER_ID) and epochs (never lower), lose no partition (no
// UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH), read every record exactly
// once, and ListGroups lists the group as a consumer group. The cluster
// test (package kafka_test) calls it.
func Consume848AcrossMove(t *testing.T, seeds []string, topic, group string, move func()) {
	ctx := testCtx(t)
	seen := &seenRecords{seen: map[string]int{}}
	var lost atomic.Int32
	onLost := kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) { lost.Add(1) })
	produceValues(t, seeds[0], topic, 0, 30, kgo.SeedBrokers(seeds...))
	ms := []*member848{startMember848(t, seeds, topic, group, seen, onLost), startMember848(t, seeds, topic, group, seen, onLost)}
	waitSeen(t, seen, 30)
	adm := kadm.NewClient(newClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	waitStable848(t, adm, topic, group)
	var ids [2]string
	var epochs [2]int32
	for i, m := range ms {
		ids[i], epochs[i] = m.cl.GroupMetadata()
	}

	move()
	produceValues(t, seeds[0], topic, 30, 60, kgo.SeedBrokers(seeds...))
	waitSeen(t, seen, 60)
	// A new admin client: the old one keeps the stopped coordinator.
	adm = kadm.NewClient(newClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	waitStable848(t, adm, topic, group)
	for i, m := range ms {
		id, epoch := m.cl.GroupMetadata()
		if id != ids[i] || epoch < epochs[i] {
			t.Errorf("member %d after the move: id %s epoch %d, before %s epoch %d", i, id, epoch, ids[i], epochs[i])
		}
	}
	if n := lost.Load(); n != 0 {
		t.Errorf("the members lost their partitions %d times across the move", n)
	}
	// The stopped node is still a member: ListGroups of every broker
	// fails there, and lists what the others answer.
	ls, err := adm.ListGroups(ctx)
	if l, ok := ls[group]; !ok || l.ProtocolType != "consumer" || l.State != "Stable" {
		t.Errorf("ListGroups after the move: %+v (listed %v), %v", l, ok, err)
	}
	for _, m := range ms {
		m.leave()
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for v, k := range seen.seen {
		if k != 1 {
			t.Errorf("record %s read %d times", v, k)
		}
	}
}

// waitStable848 waits until ConsumerGroupDescribe shows group stable with
// two members sharing topic's 6 partitions.
func waitStable848(t *testing.T, adm *kadm.Client, topic, group string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ds, err := adm.DescribeConsumerGroups(testCtx(t), group)
		d := ds[group]
		if err == nil && d.Err == nil && d.State == "Stable" && len(d.Members) == 2 && len(d.AssignedPartitions()[topic]) == 6 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ConsumerGroupDescribe: state %q, %d members, assigned %v, errs %v %v", d.State, len(d.Members), d.AssignedPartitions(), err, d.Err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
