package server_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// hibernating puts a node's idle partitions to sleep after d
// (--partition-hibernate-after), a woken one no sooner than d after it
// woke (not the default 30 s, for short tests).
func hibernating(d time.Duration) func(*node.Config) {
	return func(c *node.Config) { c.Cluster.HibernateAfter, c.Cluster.WakeGrace = d, d }
}

// replicaStates returns the Raft state of every replica of topic on the
// running nodes ("Asleep", "Leader", ...), and the leader each names.
func replicaStates(cl *nodetest.Cluster, topic string) (states, leaders []string) {
	for _, n := range cl.Nodes() {
		s := n.Server()
		if s == nil {
			continue
		}
		for _, p := range s.Broker().Cluster().LocalStatus(broker.Node{}).Partitions {
			if p.Topic == topic {
				state, _, _ := strings.Cut(p.RaftState, " on ")
				states = append(states, state)
				leaders = append(leaders, p.Leader)
			}
		}
	}
	return states, leaders
}

// waitAllAsleep waits until every running replica of topic sleeps.
func waitAllAsleep(t *testing.T, cl *nodetest.Cluster, topic string, replicas int) {
	t.Helper()
	waitUntil(t, 60*time.Second, "every replica of "+topic+" asleep", func() bool {
		states, _ := replicaStates(cl, topic)
		return len(states) == replicas && !slices.ContainsFunc(states, func(s string) bool { return s != "Asleep" })
	})
}

func createTopicIn(t *testing.T, cl *nodetest.Cluster, name string, parts int32) {
	t.Helper()
	c := nodetest.ClusterClient(t, cl)
	if _, err := c.Admin().CreateTopic(ctx(t), name, client.TopicOptions{Partitions: parts, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
}

func sorted(v []string) string { return strings.Join(slices.Sorted(slices.Values(v)), ",") }

// produceRead is produceUntil, its records sorted and comma separated.
func produceRead(t *testing.T, seeds []string, topic string, total int, values ...string) string {
	t.Helper()
	return sorted(nodetest.ProduceUntil(t, seeds, topic, total, values...))
}

// With --partition-hibernate-after, an idle topic's replicas all go to
// sleep; a produce wakes its partition and is acknowledged, and every
// record acknowledged before and after reads back; the topic sleeps again.
func TestHibernateIdleTopicWakesOnUse(t *testing.T) {
	cl := nodetest.NewCluster(t, 3, hibernating(time.Second))
	createTopicIn(t, cl, "sleepy", 3)
	if got := produceRead(t, cl.Addrs(), "sleepy", 3, "a", "b", "c"); got != "a,b,c" {
		t.Fatalf("read %q, want a, b, c", got)
	}
	waitAllAsleep(t, cl, "sleepy", 9)
	if _, leaders := replicaStates(cl, "sleepy"); slices.Contains(leaders, "") {
		t.Fatalf("a sleeping replica names no leader: %q", leaders)
	}
	if got := produceRead(t, cl.Addrs(), "sleepy", 5, "d", "e"); got != "a,b,c,d,e" {
		t.Fatalf("read %q after waking, want a..e", got)
	}
	waitAllAsleep(t, cl, "sleepy", 9)
}

// Without the flag nothing sleeps.
func TestNoHibernationByDefault(t *testing.T) {
	cl := nodetest.NewCluster(t, 3)
	createTopicIn(t, cl, "awake", 1)
	nodetest.ProduceAll(t, cl.Addrs(), "awake", "a")
	time.Sleep(3 * time.Second)
	states, _ := replicaStates(cl, "awake")
	if slices.Contains(states, "Asleep") {
		t.Fatalf("replicas asleep without --partition-hibernate-after: %q", states)
	}
}

// The node that led a sleeping partition dies: the survivors stop naming
// it once its Raft port does not answer, a produce through them wakes the
// partition on a survivor, and nothing acknowledged is lost.
func TestHibernatedLeaderDies(t *testing.T) {
	cl := nodetest.NewCluster(t, 3, hibernating(time.Second))
	createTopicIn(t, cl, "orphan", 1)
	nodetest.ProduceAll(t, cl.Addrs(), "orphan", "a", "b")
	waitAllAsleep(t, cl, "orphan", 3)
	_, leaders := replicaStates(cl, "orphan")
	var dead *nodetest.Node
	var rest []string
	for _, n := range cl.Nodes() {
		if n.ID == leaders[0] {
			dead = n
		} else {
			rest = append(rest, n.APIAddr)
		}
	}
	if dead == nil {
		t.Fatalf("no node is the recorded leader %q", leaders[0])
	}
	dead.Stop()
	if got := produceRead(t, rest, "orphan", 3, "c"); got != "a,b,c" {
		t.Fatalf("read %q through the survivors, want a,b,c", got)
	}
}

// A cluster restarted while its partitions sleep keeps them asleep (each
// replica's log ends with a sleep marker), even with a hibernation delay
// that would not put them to sleep again for an hour; a produce then wakes
// them, and every record reads back.
func TestRestartedClusterKeepsSleeping(t *testing.T) {
	after := time.Second
	cl := nodetest.NewCluster(t, 3, func(c *node.Config) { c.Cluster.HibernateAfter, c.Cluster.WakeGrace = after, time.Second })
	createTopicIn(t, cl, "dormant", 2)
	nodetest.ProduceAll(t, cl.Addrs(), "dormant", "a", "b")
	waitAllAsleep(t, cl, "dormant", 6)
	after = time.Hour
	for _, n := range cl.Nodes() {
		n.Stop()
	}
	for _, n := range cl.Nodes() {
		n.Restart()
	}
	waitAllAsleep(t, cl, "dormant", 6)
	if got := produceRead(t, cl.Addrs(), "dormant", 3, "c"); got != "a,b,c" {
		t.Fatalf("read %q after the restart, want a,b,c", got)
	}
}

// With hibernation on, a new topic's partitions sleep from the start (no
// election at create, even with a delay of an hour): the create answers
// that they take writes, and the first produce to each elects it.
func TestNewTopicBornAsleep(t *testing.T) {
	cl := nodetest.NewCluster(t, 3, hibernating(time.Hour))
	createTopicIn(t, cl, "newborn", 4)
	waitAllAsleep(t, cl, "newborn", 12) // the nodes open their replicas as they learn of the topic
	if got := produceRead(t, cl.Addrs(), "newborn", 4, "a", "b", "c", "d"); got != "a,b,c,d" {
		t.Fatalf("read %q, want a..d", got)
	}
}

// Without an awake bound, a group that woke stays awake for the wake
// grace, used or not, whatever the hibernation delay: a request over many
// partitions that wakes them all may not finish before its client's
// deadline, and the client's next try must find them awake.
func TestWokenGroupKeepsTheGrace(t *testing.T) {
	cl := nodetest.NewCluster(t, 3, func(c *node.Config) {
		c.Cluster.HibernateAfter, c.Cluster.WakeGrace = 300*time.Millisecond, 15*time.Second
	})
	createTopicIn(t, cl, "graced", 1)
	waitAllAsleep(t, cl, "graced", 3)
	nodetest.ProduceAll(t, cl.Addrs(), "graced", "a")
	time.Sleep(3 * time.Second) // ten hibernation delays
	if states, _ := replicaStates(cl, "graced"); slices.Contains(states, "Asleep") {
		t.Fatalf("a used group slept within its wake grace: %q", states)
	}
	waitAllAsleep(t, cl, "graced", 3)
}

// With an awake bound (--partition-max-awake), a group that woke and was
// used sleeps once idle for the hibernation delay: the grace keeps awake
// only a group nobody used since it woke, so that a burst over 10,000
// sleeping partitions is served a slice at a time (with the grace for
// every woken group, the burst kept all of them awake for 30 s, which two
// cores cannot heartbeat).
func TestUsedGroupSleepsWithoutTheGraceUnderABound(t *testing.T) {
	cl := nodetest.NewCluster(t, 3, func(c *node.Config) {
		c.Cluster.HibernateAfter, c.Cluster.WakeGrace, c.Cluster.MaxAwake = time.Second, time.Hour, 100
	})
	createTopicIn(t, cl, "served", 2)
	waitAllAsleep(t, cl, "served", 6)
	if got := produceRead(t, cl.Addrs(), "served", 3, "a", "b", "c"); got != "a,b,c" {
		t.Fatalf("read %q, want a,b,c", got)
	}
	waitAllAsleep(t, cl, "served", 6)
}

// A node at its awake bound puts the groups it leads to sleep once they
// have served and been idle a second, not after the hibernation delay, so
// that uses of sleeping partitions get room: with a delay of an hour and
// room for two, a third partition is served within seconds. Before, it
// waited for the delay (a minute with logd serve's default).
func TestBoundFreesRoomFromServedGroups(t *testing.T) {
	cl := nodetest.NewCluster(t, 3, func(c *node.Config) {
		c.Cluster.HibernateAfter, c.Cluster.WakeGrace, c.Cluster.MaxAwake = time.Hour, time.Hour, 2
	})
	createTopicIn(t, cl, "room", 3)
	waitAllAsleep(t, cl, "room", 9)
	c := nodetest.ClusterClient(t, cl)
	p := c.NewProducer(client.ProducerOptions{})
	defer p.Close()
	for i := range int32(3) {
		cctx, cancel := context.WithTimeout(ctx(t), 30*time.Second)
		start := time.Now()
		_, err := p.Produce(cctx, client.Record{Topic: "room", Partition: proto.Int32(i), Value: []byte("x")}).Get(cctx)
		cancel()
		if err != nil {
			t.Fatalf("produce to partition %d of 3 with room for 2 awake: %v", i, err)
		}
		t.Logf("partition %d acknowledged in %v", i, time.Since(start).Round(time.Millisecond))
	}
}

// A unary produce that wakes its sleeping partition on the node it asks
// (the preferred leader) waits for the election there and is answered in
// that one call, not with "retry": on a busy cluster the client's retry
// came seconds later, and kept the group awake for nothing meanwhile.
func TestProduceWaitsForTheElectionItStarted(t *testing.T) {
	cl := nodetest.NewCluster(t, 3, hibernating(time.Hour))
	createTopicIn(t, cl, "woken", 1)
	waitAllAsleep(t, cl, "woken", 3)
	preferred := cl.Nodes()[0].Server().Broker().Cluster().State().Topics["woken"].Replicas[0][0]
	var addr string
	for _, n := range cl.Nodes() {
		if n.ID == preferred {
			addr = n.APIAddr
		}
	}
	resp, err := pb.NewLogClient(newCCs(t).get(addr)).Produce(ctx(t), &pb.ProduceRequest{Topic: "woken", Partition: proto.Int32(0),
		Batch: encodeBatch(1, 0, batch.Record{Value: []byte("x")})})
	if err != nil {
		t.Fatalf("one produce to the sleeping partition's preferred leader %s: %v", preferred, err)
	}
	if resp.Appends[0].BaseOffset != 0 {
		t.Fatalf("appended at %d, want 0", resp.Appends[0].BaseOffset)
	}
}

// ListOffsets over every partition of a topic whose partitions all sleep
// answers, even when a woken partition falls asleep again sooner than the
// client retries: each request wakes every partition it names, not only
// the first that has no leader (torture seed 11 with 200 partitions: the
// final read's list offsets never answered).
func TestRequestsOverSleepingPartitionsWakeAll(t *testing.T) {
	// Idle partitions sleep after 300 ms, and woken ones 3 s after they
	// woke: shorter than the client takes to wake 40 one per try.
	cl := nodetest.NewCluster(t, 3, func(c *node.Config) {
		c.Cluster.HibernateAfter, c.Cluster.WakeGrace = 300*time.Millisecond, 3*time.Second
	})
	createTopicIn(t, cl, "many", 40)
	waitAllAsleep(t, cl, "many", 120)
	c := nodetest.ClusterClient(t, cl)
	cctx, cancel := context.WithTimeout(ctx(t), 30*time.Second)
	defer cancel()
	offs, err := c.Admin().ListOffsets(cctx, "many", nil, client.Latest())
	if err != nil || len(offs) != 40 {
		t.Fatalf("list offsets of 40 sleeping partitions: %d answers, %v", len(offs), err)
	}
	// A reset of a group's offsets over the whole topic asks every
	// partition the same way.
	waitAllAsleep(t, cl, "many", 120)
	rctx, cancel := context.WithTimeout(ctx(t), 30*time.Second)
	defer cancel()
	reset, err := c.Admin().ResetOffsets(rctx, "g", "many", client.AllPartitions, client.Earliest())
	if err != nil || len(reset) != 40 {
		t.Fatalf("reset offsets over 40 sleeping partitions: %d answers, %v", len(reset), err)
	}
}

// The first use of a partition born asleep elects its preferred leader
// (the placement's first replica), whichever node the client asked: every
// record here goes through node 1 alone. Before, each woke where it
// arrived, and a new topic's partitions were all led by the node clients
// happened to ask (all 10,000 of bench-partitions on one node, until the
// leader spreading moved them again).
func TestFirstUseElectsThePreferredLeader(t *testing.T) {
	cl := nodetest.NewCluster(t, 3, hibernating(time.Hour))
	const parts = 6
	createTopicIn(t, cl, "placed", parts)
	waitAllAsleep(t, cl, "placed", 3*parts)
	c, err := client.Dial(cl.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctx(t)
	p := c.NewProducer(client.ProducerOptions{})
	defer p.Close()
	for i := range int32(parts) {
		if _, err := p.Produce(ctx, client.Record{Topic: "placed", Partition: &i, Value: []byte("x")}).Get(ctx); err != nil {
			t.Fatalf("produce to partition %d: %v", i, err)
		}
	}
	// Right after the produce, before the leader spreading (every 10 s)
	// could move a leader there.
	checkPreferredLead(t, cl, "placed", cl.Nodes()[0].ID)
}

// checkPreferredLead fails t unless every partition of topic is led by
// its preferred leader (its placement's first replica) now, on the
// running nodes, or when every preferred leader is node `not` (the
// client's: the test would show nothing).
func checkPreferredLead(t *testing.T, cl *nodetest.Cluster, topic, not string) {
	t.Helper()
	var want [][]string
	for _, n := range cl.Nodes() {
		if s := n.Server(); s != nil {
			want = s.Broker().Cluster().State().Topics[topic].Replicas
			break
		}
	}
	got := make([]string, len(want))
	for _, n := range cl.Nodes() {
		s := n.Server()
		if s == nil {
			continue
		}
		for _, r := range s.Broker().Cluster().LocalStatus(broker.Node{}).Partitions {
			if r.Topic == topic && strings.HasPrefix(r.RaftState, "Leader") {
				got[r.Partition] = n.ID
			}
		}
	}
	for i := range want {
		if got[i] != want[i][0] {
			t.Errorf("partition %d: led by %q, want its preferred leader %q (placement %v)", i, got[i], want[i][0], want[i])
		}
	}
	if !slices.ContainsFunc(want, func(set []string) bool { return set[0] != not }) {
		t.Fatalf("node %s is every partition's preferred leader (%v): the test shows nothing", not, want)
	}
}

// A consumer reading every partition of a sleeping topic from its start
// reaches the end, as torture's final read does: its list offsets and
// subscriptions wake the partitions, which fall asleep again once read.
func TestConsumerReadsSleepingPartitionsToTheEnd(t *testing.T) {
	const parts, each = 40, 3
	cl := nodetest.NewCluster(t, 3, func(c *node.Config) {
		c.Cluster.HibernateAfter, c.Cluster.WakeGrace = 300*time.Millisecond, 3*time.Second
	})
	createTopicIn(t, cl, "many", parts)
	c := nodetest.ClusterClient(t, cl)
	p := c.NewProducer(client.ProducerOptions{})
	var futures []*client.Future
	for i := range parts * each {
		futures = append(futures, p.Produce(ctx(t), client.Record{Topic: "many", Partition: client.ToPartition(int32(i % parts)), Value: []byte(strconv.Itoa(i))}))
	}
	for _, f := range futures {
		if _, err := f.Get(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	waitAllAsleep(t, cl, "many", parts*3)

	cctx, cancel := context.WithTimeout(ctx(t), 60*time.Second)
	defer cancel()
	cons, err := c.NewConsumer(cctx, client.ConsumerOptions{Topic: "many", Start: client.Earliest()})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	read, failed := 0, 0
	var last error
	for {
		recs, err := cons.Poll(cctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if cctx.Err() != nil {
				t.Fatalf("read %d of %d records in 60 s; %d polls failed, the last with %v", read, parts*each, failed, last)
			}
			failed, last = failed+1, err
			time.Sleep(200 * time.Millisecond)
			continue
		}
		read += len(recs)
	}
	if read != parts*each {
		t.Fatalf("read %d records, want %d", read, parts*each)
	}
	t.Logf("%d records read; %d polls failed", read, failed)
}
