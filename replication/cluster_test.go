package replication_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/clustertest"
)

const group = "p/orders/0"

// within returns a context that ends after d (or with the test).
func within(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// acked is what producers were told: per key, the sequence numbers of its
// acknowledged records in acknowledgement order, and each record's offset.
type acked struct {
	mu     sync.Mutex
	seqs   map[string][]int
	offset map[string]int64 // "key:seq" -> offset
}

func newAcked() *acked { return &acked{seqs: map[string][]int{}, offset: map[string]int64{}} }

// produce appends n batches of 1-3 records through the leader, keys
// rotating over 4, values "key:seq", and records the acknowledgements.
func (a *acked) produce(t *testing.T, c *clustertest.Cluster, n int, tag string) {
	t.Helper()
	for i := range n {
		key := fmt.Sprintf("%s-k%d", tag, i%4)
		a.mu.Lock()
		seq := len(a.seqs[key])
		a.mu.Unlock()
		recs := make([]batch.Record, 1+i%3)
		for j := range recs {
			recs[j] = batch.Record{Timestamp: time.Now().UnixMilli(), Key: []byte(key), Value: fmt.Appendf(nil, "%s:%d", key, seq+j)}
		}
		r, err := c.Append(group, batch.Encode(nil, 0, batch.NoProducer, recs), 30*time.Second)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if got := r.LastOffset - r.BaseOffset + 1; got != int64(len(recs)) {
			t.Fatalf("append %d: offsets %+v for %d records", i, r, len(recs))
		}
		a.mu.Lock()
		for j := range recs {
			a.seqs[key] = append(a.seqs[key], seq+j)
			a.offset[fmt.Sprintf("%s:%d", key, seq+j)] = r.BaseOffset + int64(j)
		}
		a.mu.Unlock()
	}
}

// check verifies a node's committed records: every acknowledged record at
// its acknowledged offset, offsets contiguous, and per key the records in
// acknowledgement order with no duplicate.
func (a *acked) check(t *testing.T, n *clustertest.Node) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	recs := n.Records(group)
	next := map[string]int{}
	for i, r := range recs {
		if i > 0 && r.Offset != recs[i-1].Offset+1 {
			t.Fatalf("%s: offset %d follows %d", n.ID, r.Offset, recs[i-1].Offset)
		}
		key, seqText, _ := strings.Cut(r.Value, ":")
		if key != r.Key {
			t.Fatalf("%s: offset %d: key %q holds value %q", n.ID, r.Offset, r.Key, r.Value)
		}
		seq, _ := strconv.Atoi(seqText)
		if want, ok := a.offset[r.Value]; ok && want != r.Offset {
			t.Fatalf("%s: %s at offset %d, acknowledged at %d", n.ID, r.Value, r.Offset, want)
		}
		if seq != next[key] {
			t.Fatalf("%s: key %s: seq %d at offset %d, want %d (order or duplicate)", n.ID, key, seq, r.Offset, next[key])
		}
		next[key]++
	}
	for key, seqs := range a.seqs {
		if next[key] < len(seqs) {
			t.Fatalf("%s: key %s: %d records, %d acknowledged", n.ID, key, next[key], len(seqs))
		}
	}
}

// Raft replicates one partition on 3 nodes: identical bytes and offsets on
// every replica; the leader's loss loses no acknowledged record and keeps
// per-key order; the old leader, restarted after missing writes, catches up.
func TestLeaderLossKeepsAcknowledgedRecords(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	a := newAcked()
	a.produce(t, c, 30, "a")
	c.WaitConverged(group, 30*time.Second) // asserts byte-identical replicas
	for _, n := range c.Nodes() {
		a.check(t, n)
	}

	old := c.Leader(group)
	c.Kill(old.ID)
	leader := c.Leader(group)
	if leader == old {
		t.Fatal("the killed node still leads")
	}
	a.produce(t, c, 30, "b")
	c.WaitConverged(group, 30*time.Second)
	for _, n := range c.Up() {
		a.check(t, n)
	}

	c.Restart(old.ID)
	a.produce(t, c, 5, "c")
	c.WaitConverged(group, 60*time.Second)
	for _, n := range c.Nodes() {
		a.check(t, n)
	}
	if hw := old.Replica(group).Log().HighWatermark(); hw != leader.Replica(group).Log().HighWatermark() {
		t.Fatalf("restarted node at high watermark %d", hw)
	}
}

// A leader cut off from its followers keeps appending to its own log but
// commits nothing; when it rejoins, its conflicting uncommitted tail is
// truncated (Raft's DeleteRange suffix path) and replaced by the new
// leader's entries.
func TestMinorityLeaderTailTruncatedOnRejoin(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	a := newAcked()
	a.produce(t, c, 5, "a")
	c.WaitConverged(group, 30*time.Second)

	old := c.Leader(group)
	op := old.Replica(group)
	committed := op.Log().LastIndex()
	oldTerm := op.Raft().CurrentTerm()
	c.Net.Isolate(old.ID, c.IDs()...)

	// Appends on the isolated leader: stored locally, never acknowledged.
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Key: []byte("lost"), Value: fmt.Appendf(nil, "lost:%d", i)}})
			_, err := op.Append(within(t, 5*time.Second), b)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil {
			t.Fatal("an isolated leader acknowledged an append")
		}
		if !errors.Is(err, replication.ErrNotLeader) {
			t.Logf("isolated append: %v", err)
		}
	}
	tail := op.Log().LastIndex()
	if tail <= committed {
		t.Fatalf("the isolated leader stored nothing past %d", committed)
	}
	for i := committed + 1; i <= tail; i++ {
		if e, err := op.Log().Entry(i); err != nil || e.Term != oldTerm {
			t.Fatalf("isolated leader's entry %d: %+v, %v", i, e, err)
		}
	}

	// The majority elects a leader and moves on.
	var leader *clustertest.Node
	deadline := time.Now().Add(30 * time.Second)
	for leader == nil || leader == old {
		if time.Now().After(deadline) {
			t.Fatal("the majority elected no leader")
		}
		for _, n := range c.Up() {
			if n != old && n.Replica(group).Raft().State() == raft.Leader {
				leader = n
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	for i := range 8 {
		b := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Key: []byte("new"), Value: fmt.Appendf(nil, "new:%d", i)}})
		if _, err := leader.Replica(group).Append(within(t, 10*time.Second), b); err != nil {
			t.Fatal(err)
		}
	}

	c.Net.Heal()
	c.WaitConverged(group, 60*time.Second)
	for i := committed + 1; i <= tail; i++ {
		e, err := op.Log().Entry(i)
		if err != nil {
			t.Fatal(err)
		}
		if e.Term == oldTerm {
			t.Fatalf("entry %d still has the old leader's term %d: its uncommitted tail was not truncated", i, oldTerm)
		}
	}
	for _, n := range c.Nodes() {
		a.check(t, n)
		for _, r := range n.Records(group) {
			if r.Key == "lost" {
				t.Fatalf("%s: unacknowledged record %s at offset %d is committed", n.ID, r.Value, r.Offset)
			}
		}
	}
}

// A follower that fell behind the leader's log start (retention deleted
// the segments it needs) gets a snapshot install. Whether or not it has
// caught up (by segment copy, catchup_test.go), it never gives the leader's
// records other offsets: an offset never changes, on any replica.
func TestFollowerBehindLogStartNeverRenumbersOffsets(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}, Log: func(o *log.Options) { o.SegmentBytes = 4096 }})
	a := newAcked()
	a.produce(t, c, 10, "a")
	c.WaitConverged(group, 30*time.Second)
	leader := c.Leader(group)
	var f *clustertest.Node
	for _, n := range c.Nodes() {
		if n != leader {
			f = n
		}
	}
	c.Kill(f.ID)
	a.produce(t, c, 80, "b")
	for _, n := range c.Up() {
		p := n.Replica(group)
		if err := p.Raft().Snapshot().Error(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Log().DeleteSegmentsBefore(p.Log().HighWatermark()); err != nil {
			t.Fatal(err)
		}
	}
	leader = c.Leader(group)
	lp := leader.Replica(group).Log()
	if lp.StartOffset() == 0 {
		t.Fatal("retention deleted nothing on the leader")
	}
	c.Restart(f.ID)
	a.produce(t, c, 5, "c")
	fl := f.Replica(group).Log()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && fl.LastIndex() != lp.LastIndex() {
		time.Sleep(50 * time.Millisecond)
	}
	if fl.LastIndex() >= lp.FirstIndex() {
		// Caught up past the snapshot: the offsets must be the leader's.
		c.WaitConverged(group, 30*time.Second)
		if fl.NextOffset() != lp.NextOffset() {
			t.Fatalf("follower next offset %d, leader %d: records renumbered", fl.NextOffset(), lp.NextOffset())
		}
		return
	}
	if fl.NextOffset() > lp.StartOffset() {
		t.Fatalf("follower holds offsets up to %d, which the leader gave other records", fl.NextOffset())
	}
	t.Logf("follower %s stays at index %d (offset %d) below the leader's log start (index %d, offset %d): catching up needs segment copy",
		f.ID, fl.LastIndex(), fl.NextOffset(), lp.FirstIndex(), lp.StartOffset())
}

// producer appends records "key:seq" for one key, one at a time, through
// whichever node leads. A record whose append failed may or may not be
// committed (leadership lost mid-append); it is never retried, so a key's
// committed records must be in seq order, with every acknowledged one at
// the offset it was acknowledged with.
type producer struct {
	key   string
	acked map[int]int64 // seq -> offset
	sent  int
}

func (p *producer) run(t *testing.T, c *clustertest.Cluster, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		b := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Key: []byte(p.key), Value: fmt.Appendf(nil, "%s:%d", p.key, p.sent)}})
		seq := p.sent
		p.sent++
		if r, err := c.Append(group, b, 20*time.Second); err == nil {
			p.acked[seq] = r.BaseOffset
		}
	}
}

func (p *producer) check(t *testing.T, n *clustertest.Node) {
	t.Helper()
	last := -1
	found := map[int]int64{}
	for _, r := range n.Records(group) {
		if r.Key != p.key {
			continue
		}
		_, seqText, _ := strings.Cut(r.Value, ":")
		seq, _ := strconv.Atoi(seqText)
		if seq <= last {
			t.Fatalf("%s: key %s: seq %d after %d at offset %d", n.ID, p.key, seq, last, r.Offset)
		}
		last = seq
		found[seq] = r.Offset
	}
	for seq, off := range p.acked {
		got, ok := found[seq]
		if !ok {
			t.Fatalf("%s: key %s: acknowledged seq %d is missing", n.ID, p.key, seq)
		}
		if got != off {
			t.Fatalf("%s: key %s: seq %d at offset %d, acknowledged at %d", n.ID, p.key, seq, got, off)
		}
	}
}

// A replica closed and reopened on a running node (same log, same Pebble
// keys) rejoins its group and catches up; reopening twice is refused.
func TestReopenReplicaOnRunningNode(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	a := newAcked()
	a.produce(t, c, 5, "a")
	leader := c.Leader(group)
	var f *clustertest.Node
	for _, n := range c.Nodes() {
		if n != leader {
			f = n
		}
	}
	rn := f.Replication()
	l := f.Replica(group).Log()
	if _, err := rn.OpenReplica(group, l, replication.ReplicaOptions{}); err == nil {
		t.Fatal("opening an open group twice succeeded")
	}
	if err := rn.CloseReplica(group); err != nil {
		t.Fatal(err)
	}
	a.produce(t, c, 20, "b")
	if _, err := rn.OpenReplica(group, l, replication.ReplicaOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitConverged(group, 30*time.Second)
	for _, n := range c.Nodes() {
		a.check(t, n)
	}
}
