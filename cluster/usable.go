package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/replication/meta"
)

// UsableTimeout bounds how long CreateTopic (and AddPartitions) waits
// for the new partitions to take writes, when the request has no deadline
// of its own (setupContext); after it the topic exists but the request
// answers ErrTopicNotReady saying which partitions have no leader yet.
const UsableTimeout = 10 * time.Second

// setupContext bounds the waits of a topic change after its command
// committed (awaitLocal, awaitUsable, AwaitTopic): by the request's
// deadline when it has one (a gRPC deadline: the client's call timeout,
// `--timeout`; Kafka's timeout_ms), less a margin for the answer to reach
// the client before it gives up (a tenth of what is left, 100 ms to 1 s);
// by UsableTimeout otherwise. Kafka's CreateTopics likewise waits for its
// request's timeout. A fixed wait would answer a create of 10,000
// partitions with `--timeout 5m` "no leader after 10s" though its client
// would wait minutes.
func setupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithTimeout(ctx, UsableTimeout)
	}
	left := time.Until(d)
	return context.WithDeadline(ctx, d.Add(-min(max(left/10, 100*time.Millisecond), time.Second)))
}

// awaitUsable waits, within ctx (setupContext), until each partition from
// `from` on of topic name has a leader that takes a produce, known to a
// majority of its replicas (so a produce sent to them is led there: a
// node without a replica sends it to the partition's first replica, which
// leads or knows who does).
func (c *Cluster) awaitUsable(ctx context.Context, name string, from int) error {
	start := time.Now()
	for {
		t, ok := c.State().Topics[name]
		if !ok {
			return kind.Errorf(kind.ErrUnavailable, "topic %q was deleted while it was being set up", name)
		}
		missing := c.unledPartitions(ctx, t, from)
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return unledError(name, t, missing, time.Since(start))
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// unledError says which partitions of topic name had no leader at the
// last look, each with its replicas, so an operator sees every node to
// bring back, not the first of them.
func unledError(name string, t meta.Topic, missing []int, after time.Duration) error {
	after = after.Round(100 * time.Millisecond)
	if len(missing) == 1 {
		return kind.Errorf(ErrTopicNotReady, "topic %q is created but partition %d has no leader after %v (too few of its replicas %v are up?): it takes writes once they elect one; see `logd cluster status`",
			name, missing[0], after, t.Replicas[missing[0]])
	}
	parts := make([]string, len(missing))
	for i, p := range missing {
		parts[i] = fmt.Sprintf("%d %v", p, t.Replicas[p])
	}
	return kind.Errorf(ErrTopicNotReady, "topic %q is created but partitions %s have no leader after %v (too few of their replicas are up?): they take writes once they elect one; see `logd cluster status`",
		name, strings.Join(parts, ", "), after)
}

// unledPartitions are the partitions from `from` on of t without a
// leader that a majority of its replicas name (the leader itself among
// them, saying it leads). A minority that does
// not know the leader yet (a replica cut off from the others) does not
// hold the create up: it redirects to the first replica, which leads or
// knows who does, once it hears from the leader. A partition asleep on a
// majority of its replicas (a new group with hibernation on) is usable:
// its first use elects it (hibernate.go).
func (c *Cluster) unledPartitions(ctx context.Context, t meta.Topic, from int) []int {
	views := c.replicaViews(ctx, t, from)
	var unled []int
	for i := from; i < len(t.Replicas); i++ {
		named := map[string]int{}
		leads := map[string]bool{}
		asleep := 0
		for _, n := range t.Replicas[i] {
			rs, ok := views[n][int32(i)]
			if ok && strings.HasPrefix(rs.RaftState, "Asleep") {
				asleep++ // a use wakes and elects it (hibernate.go)
			}
			if !ok || rs.Leader == "" {
				continue
			}
			named[rs.Leader]++
			if n == rs.Leader && strings.HasPrefix(rs.RaftState, raft.Leader.String()) {
				leads[n] = true
			}
		}
		usable := 2*asleep > len(t.Replicas[i])
		for l, votes := range named {
			usable = usable || (leads[l] && 2*votes > len(t.Replicas[i]))
		}
		if !usable {
			unled = append(unled, i)
		}
	}
	return unled
}

// replicaViews asks each node holding a replica of t's partitions from
// `from` on for its replicas' state (this node's from itself), by
// partition; a node that does not answer has no entry.
func (c *Cluster) replicaViews(ctx context.Context, t meta.Topic, from int) map[string]map[int32]ReplicaStatus {
	nodes := map[string]bool{}
	for _, set := range t.Replicas[min(from, len(t.Replicas)):] {
		for _, n := range set {
			nodes[n] = true
		}
	}
	views := map[string]map[int32]ReplicaStatus{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var st Status
			if id == c.self {
				st = c.LocalStatus(meta.Node{})
			} else {
				cctx, cancel := context.WithTimeout(ctx, StatusTimeout)
				defer cancel()
				var err error
				if st, err = c.peerStatus(cctx, c.node(id).RaftAddr); err != nil {
					return
				}
			}
			v := map[int32]ReplicaStatus{}
			for _, rs := range st.Partitions {
				if rs.Topic == t.Config.Name {
					v[rs.Partition] = rs
				}
			}
			mu.Lock()
			views[id] = v
			mu.Unlock()
		}()
	}
	wg.Wait()
	return views
}

// AwaitTopic waits until this node's metadata and local topics have topic
// name (as changed by a request another node answered: a front-end that
// forwarded a create or alter returns once it can serve the topic too).
func (c *Cluster) AwaitTopic(ctx context.Context, name string, partitions int32) error {
	ctx, cancel := setupContext(ctx)
	defer cancel()
	for {
		t, ok := c.State().Topics[name]
		lc, err := c.o.Topics.Config(name)
		if ok && len(t.Replicas) >= int(partitions) && err == nil && lc.Partitions >= partitions {
			return nil
		}
		select {
		case <-ctx.Done():
			return kind.Errorf(kind.ErrUnavailable, "topic %q: the change is committed but this node has not applied it yet: retry to see it", name)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
