package replication_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/clustertest"
)

// waitAsleep waits until every running replica of group is asleep.
func waitAsleep(t *testing.T, c *clustertest.Cluster, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var awake []string
		for _, n := range c.Up() {
			if !n.Replica(group).Asleep() {
				awake = append(awake, fmt.Sprintf("%s (%v)", n.ID, n.Replica(group).Raft().State()))
			}
		}
		if len(awake) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, replicas still awake: %v", timeout, awake)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hibernate puts group to sleep through its leader and waits until every
// running replica sleeps.
func hibernate(t *testing.T, c *clustertest.Cluster) *clustertest.Node {
	t.Helper()
	leader := c.Leader(group)
	ok, err := leader.Replica(group).Hibernate(10 * time.Second)
	if err != nil || !ok {
		t.Fatalf("hibernate on %s: %v, %v", leader.ID, ok, err)
	}
	if !leader.Replica(group).Asleep() {
		t.Fatalf("%s hibernated and is awake", leader.ID)
	}
	waitAsleep(t, c, 10*time.Second)
	return leader
}

// A hibernated group sleeps on every replica and stays asleep (no
// follower campaigns against the silent leader); a use on any replica
// (Wake(true)) elects it there, the RPCs of its election wake the others,
// and every acknowledged record, before and after, is on every replica.
func TestHibernateSleepsAndWakesWhereUsed(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	a := newAcked()
	a.produce(t, c, 20, "a")
	c.WaitConverged(group, 30*time.Second)

	old := hibernate(t, c)
	rec, ok := old.Replica(group).Slept()
	if !ok || !rec.WasLeader || rec.LeaderID != raft.ServerID(old.ID) {
		t.Fatalf("the old leader's sleep record: %+v, %v", rec, ok)
	}
	// Longer than any election timeout (1.5 s to 3 s here): nobody wakes.
	time.Sleep(4 * time.Second)
	for _, n := range c.Up() {
		p := n.Replica(group)
		if _, wakes := p.SleepCounts(); !p.Asleep() || wakes != 0 {
			t.Fatalf("%s: asleep %v, woke %d times while idle", n.ID, p.Asleep(), wakes)
		}
		_, err := p.Append(within(t, 5*time.Second), batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Value: []byte("x")}}))
		if !errors.Is(err, replication.ErrAsleep) {
			t.Fatalf("%s: an append to a sleeping replica: %v, want ErrAsleep", n.ID, err)
		}
	}

	var woken *clustertest.Node
	for _, n := range c.Nodes() {
		if n != old {
			woken = n
			break
		}
	}
	if err := woken.Replica(group).Wake(true); err != nil {
		t.Fatal(err)
	}
	if l := c.Leader(group); l != woken {
		t.Fatalf("%s woke to campaign, %s leads", woken.ID, l.ID)
	}
	a.produce(t, c, 20, "b")
	c.WaitConverged(group, 30*time.Second)
	for _, n := range c.Nodes() {
		if n.Replica(group).Asleep() {
			t.Fatalf("%s still asleep after the group was used", n.ID)
		}
		a.check(t, n)
	}
}

// ackedGroup starts a cluster and acknowledges n batches, on every replica.
func ackedGroup(t *testing.T, n int) (*clustertest.Cluster, *acked) {
	t.Helper()
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	a := newAcked()
	a.produce(t, c, n, "a")
	c.WaitConverged(group, 30*time.Second)
	return c, a
}

// sleepingGroup starts a cluster, acknowledges 10 batches and puts the
// group to sleep; it returns the replica that led it.
func sleepingGroup(t *testing.T) (*clustertest.Cluster, *acked, *clustertest.Node) {
	t.Helper()
	c, a := ackedGroup(t, 10)
	return c, a, hibernate(t, c)
}

// produceAndCheck acknowledges 10 more batches and checks every running
// replica holds every acknowledged record.
func produceAndCheck(t *testing.T, c *clustertest.Cluster, a *acked, tag string) {
	t.Helper()
	a.produce(t, c, 10, tag)
	c.WaitConverged(group, 60*time.Second)
	for _, n := range c.Up() {
		a.check(t, n)
	}
}

// A node restarted while its group sleeps opens its replica awake; its
// election wakes the others, and the group takes writes again.
func TestRestartWhileAsleep(t *testing.T) {
	c, a, old := sleepingGroup(t)
	c.Kill(old.ID)
	c.Restart(old.ID)
	if old.Replica(group).Asleep() {
		t.Fatal("a restarted replica opened asleep")
	}
	produceAndCheck(t, c, a, "b")
}

// Every node restarted while the group sleeps: each replica's log ends
// with the marker, so SleepIfMarked puts it back to sleep knowing no
// leader, nothing campaigns, and a use on any one elects it.
func TestRestartAllAsleepStaysAsleep(t *testing.T) {
	c, a, _ := sleepingGroup(t)
	for _, n := range c.Nodes() {
		c.Kill(n.ID)
	}
	for _, n := range c.Nodes() {
		c.Restart(n.ID)
		ok, err := n.Replica(group).SleepIfMarked()
		if err != nil || !ok {
			t.Fatalf("%s: SleepIfMarked after a restart: %v, %v", n.ID, ok, err)
		}
		if rec, _ := n.Replica(group).Slept(); rec.LeaderID != "" {
			t.Fatalf("%s: a replica put back to sleep names leader %s", n.ID, rec.LeaderID)
		}
	}
	time.Sleep(4 * time.Second) // past any election timeout
	for _, n := range c.Nodes() {
		if !n.Replica(group).Asleep() {
			t.Fatalf("%s woke with nothing using the group", n.ID)
		}
	}
	if err := c.Nodes()[2].Replica(group).Wake(true); err != nil {
		t.Fatal(err)
	}
	produceAndCheck(t, c, a, "b")
}

// A group whose leader died asleep (killed, not restarted) is woken by a
// use on a survivor, elects it, and takes writes on the two survivors.
func TestWakeAfterSleepingLeaderDied(t *testing.T) {
	c, a, old := sleepingGroup(t)
	c.Kill(old.ID)
	survivor := c.Up()[0]
	if err := survivor.Replica(group).Wake(true); err != nil {
		t.Fatal(err)
	}
	produceAndCheck(t, c, a, "b")
}

// Sleeping and waking repeatedly, with writes in between, loses nothing.
func TestSleepWakeCycles(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	a := newAcked()
	for i := range 4 {
		a.produce(t, c, 5, fmt.Sprintf("c%d", i))
		c.WaitConverged(group, 30*time.Second)
		hibernate(t, c)
		n := c.Nodes()[i%3]
		if err := n.Replica(group).Wake(true); err != nil {
			t.Fatal(err)
		}
	}
	a.produce(t, c, 5, "end")
	c.WaitConverged(group, 30*time.Second)
	for _, n := range c.Nodes() {
		a.check(t, n)
		if s, w := n.Replica(group).SleepCounts(); s != 4 || w != 4 {
			t.Fatalf("%s slept %d and woke %d times, want 4 and 4", n.ID, s, w)
		}
	}
}

// Node.Awake counts the replicas whose Raft runs: one per node once the
// group is open, none once it sleeps, one again once a use woke it (the
// others by its election's RPCs), none once closed.
func TestAwakeCountsRunningReplicas(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	awake := func(want int64) {
		t.Helper()
		for _, n := range c.Up() {
			deadline := time.Now().Add(10 * time.Second)
			for n.Replication().Awake() != want && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := n.Replication().Awake(); got != want {
				t.Fatalf("%s: %d replicas awake, want %d", n.ID, got, want)
			}
		}
	}
	c.WaitConverged(group, 30*time.Second)
	awake(1)
	hibernate(t, c)
	awake(0)
	if err := c.Nodes()[1].Replica(group).Wake(true); err != nil {
		t.Fatal(err)
	}
	awake(1)
	for _, n := range c.Up() {
		if err := n.Replication().CloseReplica(group); err != nil {
			t.Fatal(err)
		}
	}
	awake(0)
}

// A use of the leader while its sleep marker is on its way keeps the group
// awake: the request it serves would otherwise find the replica asleep
// (the hibernate loop checks idleness before the marker, which takes a
// commit). Once uses stop, the group sleeps.
func TestHibernateAbandonedByAUse(t *testing.T) {
	c, a := ackedGroup(t, 5)
	leader := c.Leader(group)
	p := leader.Replica(group)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				p.Touch()
			}
		}
	}()
	ok, err := p.Hibernate(10 * time.Second)
	close(stop)
	<-done
	if err != nil || ok || p.Asleep() {
		t.Fatalf("hibernate while used: slept %v (asleep %v), %v; want awake", ok, p.Asleep(), err)
	}
	hibernate(t, c)
	if err := p.Wake(true); err != nil {
		t.Fatal(err)
	}
	a.produce(t, c, 5, "b")
	c.WaitConverged(group, 30*time.Second)
	for _, n := range c.Nodes() {
		a.check(t, n)
	}
}

// A replica whose log grew past its last snapshot takes one as it falls
// asleep, so that waking does not read its log: a new Raft instance reads
// every entry after the last snapshot (hashicorp/raft scans them for
// configuration changes), and partitions snapshot only every 8,192
// entries. Waking a replica of 2,000 entries took 40 ms that way on a
// quiet machine, seconds on a loaded one.
func TestSleepTakesASnapshot(t *testing.T) {
	c, _ := ackedGroup(t, 300) // past sleepSnapshotAfter
	old := hibernate(t, c)
	want := old.Replica(group).Log().LastIndex() - 1 // before the marker, at least
	if err := old.Replica(group).Wake(true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitLeader(group, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		p := n.Replica(group)
		deadline := time.Now().Add(10 * time.Second)
		for p.Asleep() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // woken by the election's RPCs
		}
		got, err := strconv.ParseUint(p.Raft().Stats()["last_snapshot_index"], 10, 64)
		if err != nil || got < want {
			t.Errorf("%s woke with its last snapshot at index %d (%v), want %d or later", n.ID, got, err, want)
		}
	}
}

// A follower cut off while the sleep marker commits without it gets the
// marker before the leader sleeps, once its link is back within F (the
// leader waits for it): then every replica sleeps and stays asleep. A
// leader that slept at the commit left it behind, and it campaigned and
// woke the whole group. A follower that stays cut off is not waited for
// longer than F.
func TestLeaderSleepsOnceEveryReachableFollowerHasTheMarker(t *testing.T) {
	c, _ := ackedGroup(t, 5)
	leader := c.Leader(group)
	var behind, other *clustertest.Node
	for _, n := range c.Nodes() {
		switch {
		case n == leader:
		case behind == nil:
			behind = n
		default:
			other = n
		}
	}
	c.Net.Partition(leader.ID, behind.ID)
	heal := time.AfterFunc(300*time.Millisecond, c.Net.Heal)
	defer heal.Stop()
	ok, err := leader.Replica(group).Hibernate(10 * time.Second)
	if err != nil || !ok {
		t.Fatalf("hibernate on %s: %v, %v", leader.ID, ok, err)
	}
	waitAsleep(t, c, 10*time.Second)
	time.Sleep(5 * time.Second) // past the follower's election timeout (1.5 s)
	for _, n := range c.Nodes() {
		if s, w := n.Replica(group).SleepCounts(); !n.Replica(group).Asleep() || s != 1 || w != 0 {
			t.Errorf("%s: asleep %v, slept %d and woke %d times; want asleep, once, never", n.ID, n.Replica(group).Asleep(), s, w)
		}
	}

	// Cut off for good: the leader sleeps within F (1.5 s) of the commit.
	if err := other.Replica(group).Wake(true); err != nil {
		t.Fatal(err)
	}
	leader = c.Leader(group)
	for _, n := range c.Nodes() {
		if n != leader {
			c.Net.Partition(leader.ID, n.ID)
			break
		}
	}
	defer c.Net.Heal()
	start := time.Now()
	if ok, err := leader.Replica(group).Hibernate(10 * time.Second); err != nil || !ok {
		t.Fatalf("hibernate on %s with a follower cut off: %v, %v", leader.ID, ok, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("hibernate with a follower cut off took %v, want about F (1.5 s)", d)
	}
}

// A leadership transfer asked of a replica whose instance has shut down
// (it fell asleep after the spreader saw it lead) returns. Raft's
// LeadershipTransferToServer may still queue it then (its select between
// the queue, which has room for one, and the shutdown picks either), and
// nothing answers a queued request once the instance has stopped: the
// spreader waited for good, and held its node's shutdown.
func TestTransferLeadershipOfASleepingReplicaReturns(t *testing.T) {
	c, _, leader := sleepingGroup(t)
	p := leader.Replica(group)
	var other *clustertest.Node
	for _, n := range c.Nodes() {
		if n != leader {
			other = n
		}
	}
	for i := range 20 { // each try queues it with odds of one half
		done := make(chan error, 1)
		go func() { done <- p.TransferLeadership(raft.ServerID(other.ID), raft.ServerAddress(other.Addr)) }()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("try %d: a sleeping replica transferred its leadership", i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("try %d: no answer after 5s", i)
		}
	}
}

// A linearizable read's barrier asked of a replica whose instance has shut
// down (it fell asleep after the read found it leading) returns. Raft's
// Barrier may still queue it then (its select between the apply queue,
// buffered for partitions, and the shutdown picks either), and nothing
// answers a queued request once the instance has stopped: the read
// index's round never ended, and every later read of the partition waited
// behind it until its own deadline.
func TestReadBarrierOfASleepingReplicaReturns(t *testing.T) {
	_, _, leader := sleepingGroup(t)
	p := leader.Replica(group)
	for i := range 20 { // each try queues it with odds of one half
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := p.ConfirmRead(ctx)
		cancel()
		if err == nil {
			t.Fatalf("try %d: a sleeping replica confirmed a read", i)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("try %d: no answer after 5s: %v", i, err)
		}
	}
}
