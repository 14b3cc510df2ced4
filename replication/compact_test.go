package replication_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/replication/clustertest"
)

// appendKeyed appends n batches of 3 records through the leader, keys
// cycling over k0..k(keys-1), values "tag:i:j", and records each key's
// newest value in latest.
func appendKeyed(t *testing.T, c *clustertest.Cluster, n, keys int, tag string, latest map[string]string) {
	t.Helper()
	for i := range n {
		recs := make([]batch.Record, 3)
		for j := range recs {
			k := fmt.Sprintf("k%d", (3*i+j)%keys)
			recs[j] = batch.Record{Timestamp: time.Now().UnixMilli(), Key: []byte(k), Value: fmt.Appendf(nil, "%s:%d:%d", tag, i, j)}
			latest[k] = string(recs[j].Value)
		}
		if _, err := c.Append(group, batch.Encode(nil, 0, batch.NoProducer, recs), 30*time.Second); err != nil {
			t.Fatalf("append %s %d: %v", tag, i, err)
		}
	}
}

// compactReplica compacts n's own log below what its latest Raft
// snapshot covers (Replica.TrimLimit), as the broker's cleaner does, and
// returns how many segments it rewrote.
func compactReplica(t *testing.T, n *clustertest.Node) int {
	t.Helper()
	p := n.Replica(group)
	limit, err := p.TrimLimit()
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Log().Compact(log.CompactOptions{Below: limit})
	if err != nil {
		t.Fatalf("%s: compact: %v", n.ID, err)
	}
	return res.Segments
}

// latestOf reads n's records from its log start to its high watermark,
// stepping over compacted gaps, and returns each key's newest value;
// gaps is how many offsets there hold no record.
func latestOf(t *testing.T, n *clustertest.Node) (latest map[string]string, gaps int64) {
	t.Helper()
	latest = map[string]string{}
	l := n.Replica(group).Log()
	off, hw := l.StartOffset(), l.HighWatermark()
	records := int64(0)
	for off < hw {
		b, err := l.Read(off, 1<<20)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: read %d (high watermark %d): %d bytes, %v", n.ID, off, hw, len(b), err)
		}
		err = batch.Split(b, func(raw []byte, info batch.Info) error {
			if info.BaseOffset >= hw {
				return nil
			}
			_, recs, err := batch.Decode(raw, off)
			if err != nil || info.NextOffset() <= off {
				return fmt.Errorf("batch %d..%d at offset %d: %v", info.BaseOffset, info.NextOffset(), off, err)
			}
			for _, r := range recs {
				latest[string(r.Key)] = string(r.Value)
				records++
			}
			off = info.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", n.ID, err)
		}
	}
	return latest, hw - l.StartOffset() - records
}

// waitCaughtUp waits until n's log ends where the leader's does and both
// have applied it.
func waitCaughtUp(t *testing.T, c *clustertest.Cluster, n *clustertest.Node, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if leader := c.Leader(group); leader != nil && n.Replica(group) != nil {
			lp, p := leader.Replica(group), n.Replica(group)
			ll, nl := lp.Log(), p.Log()
			if ll.LastIndex() == nl.LastIndex() && ll.HighWatermark() == nl.HighWatermark() &&
				lp.Raft().AppliedIndex() >= ll.LastIndex() && p.Raft().AppliedIndex() >= nl.LastIndex() {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not catch up in %v", n.ID, timeout)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Each replica of a compacted partition compacts its own closed segments
// below its latest Raft snapshot; a follower that was down, behind the
// leader's retention, catches up by copying the leader's (compacted)
// segments, and then every replica,
// compacted or copied, serves each key's newest value, and goes on
// replicating and compacting.
func TestReplicasCompactAndCatchUpWithCompactedSegments(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{
		Groups: []string{group},
		Log:    func(o *log.Options) { o.SegmentBytes = 2048 },
		Raft:   func(rc *raft.Config) { rc.SnapshotThreshold = 1 << 30; rc.SnapshotInterval = time.Hour },
	})
	want := map[string]string{}
	appendKeyed(t, c, 20, 7, "a", want)
	c.WaitConverged(group, 30*time.Second)
	leader := c.Leader(group)
	var f *clustertest.Node
	for _, n := range c.Nodes() {
		if n != leader {
			f = n
		}
	}
	c.Kill(f.ID)
	appendKeyed(t, c, 150, 7, "b", want)
	leader = c.Leader(group)
	// Every replica up snapshots and compacts its own log; the leader's
	// compacted entries are gone for Raft, which sends its snapshot.
	for _, n := range c.Up() {
		if err := n.Replica(group).Raft().Snapshot().Error(); err != nil {
			t.Fatal(err)
		}
		if compactReplica(t, n) == 0 {
			t.Fatalf("%s compacted nothing", n.ID)
		}
	}
	// Retention (compact,delete) drops the older half of the leader's
	// segments, below the follower's end: it can only catch up by copying
	// the leader's segments, compacted ones among them.
	lp := leader.Replica(group)
	segs := lp.Log().Segments()
	if _, err := lp.Log().DeleteSegmentsBefore(segs[len(segs)/2].BaseOffset); err != nil {
		t.Fatal(err)
	}
	appendKeyed(t, c, 5, 7, "c", want)
	c.Restart(f.ID)
	waitCaughtUp(t, c, f, 60*time.Second)
	if copies, copied := f.Replica(group).CatchUps(); copies == 0 || copied == 0 {
		t.Fatalf("%s caught up with %d segment copies: the test needs it to copy the compacted segments", f.ID, copies)
	}
	appendKeyed(t, c, 20, 7, "d", want)
	for _, n := range c.Nodes() {
		waitCaughtUp(t, c, n, 30*time.Second)
		got, gaps := latestOf(t, n)
		if !maps.Equal(got, want) {
			t.Fatalf("%s serves %v, want %v", n.ID, got, want)
		}
		if gaps == 0 {
			t.Fatalf("%s's log has no gap: not compacted", n.ID)
		}
	}
	// The follower compacts its own log too, and still agrees.
	if err := f.Replica(group).Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	compactReplica(t, f)
	if got, _ := latestOf(t, f); !maps.Equal(got, want) {
		t.Fatalf("%s after its own compaction serves %v, want %v", f.ID, got, want)
	}
}
