package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/logd/logd/client"
)

// NodeAddresser is a Cluster that can tell a node's own API address when
// Addr is a proxy's: cluster status reports nodes by their own addresses.
type NodeAddresser interface {
	NodeAddr(node int) string
}

// LeaderOf returns the node leading topic's partition, as the cluster
// status of the first node that answers reports it.
func LeaderOf(ctx context.Context, c Cluster, topic string, partition int32) (int, error) {
	own := func(i int) string {
		if na, ok := c.(NodeAddresser); ok {
			return na.NodeAddr(i)
		}
		return c.Addr(i)
	}
	var lastErr error
	for i := range c.Size() {
		cl, err := client.Dial(c.Addr(i), client.WithCallTimeout(2*time.Second))
		if err != nil {
			lastErr = err
			continue
		}
		st, err := cl.Admin().ClusterStatus(ctx)
		cl.Close()
		if err != nil {
			lastErr = err
			continue
		}
		leader := ""
		for _, p := range st.Partitions {
			if p.Topic == topic && p.Partition == partition {
				leader = p.Leader
			}
		}
		if leader == "" {
			return 0, fmt.Errorf("torture: %s/%d has no leader in node %d's cluster status", topic, partition, i)
		}
		for _, n := range st.Nodes {
			if n.ID != leader {
				continue
			}
			for j := range c.Size() {
				if own(j) == n.APIAddr {
					return j, nil
				}
			}
			return 0, fmt.Errorf("torture: leader %s of %s/%d is at %s, not a node of this cluster", leader, topic, partition, n.APIAddr)
		}
		return 0, fmt.Errorf("torture: leader %s of %s/%d is not among the nodes node %d knows", leader, topic, partition, i)
	}
	return 0, fmt.Errorf("torture: no node answered the cluster status: %w", lastErr)
}

// pickNode chooses the node a fault strikes: a random one, or with
// cfg.TargetLeader the leader of a random partition of cfg.Topic (a random
// node when no leader is known), for cfg.LeaderShare of the faults.
func pickNode(ctx context.Context, c Cluster, cfg NemesisConfig, rng *rand.Rand) int {
	node := rng.IntN(c.Size())
	if cfg.MetaLeaderShare > 0 && cfg.Group != "" && rng.Float64() < cfg.MetaLeaderShare {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		l, err := MetaLeaderOf(lctx, c, cfg.Group)
		if err != nil {
			cfg.Logf("nemesis: no metadata leader to strike (%v): node %d", err, node)
			return node
		}
		cfg.Logf("nemesis: striking the metadata leader (the group coordinator), node %d", l)
		return l
	}
	random := cfg.LeaderShare > 0 && rng.Float64() >= cfg.LeaderShare
	if !cfg.TargetLeader || random || cfg.Topic == "" || cfg.Partitions <= 0 {
		return node
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := LeaderOf(lctx, c, cfg.Topic, rng.Int32N(cfg.Partitions))
	if err != nil {
		cfg.Logf("nemesis: no leader to strike (%v): node %d", err, node)
		return node
	}
	return l
}

// WaitClusterReady waits until a node's cluster status lists every node of
// c alive, so a topic created next is placed on all of them.
func WaitClusterReady(ctx context.Context, c Cluster, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		for i := range c.Size() {
			cl, err := client.Dial(c.Addr(i), client.WithCallTimeout(2*time.Second))
			if err != nil {
				last = err
				continue
			}
			st, err := cl.Admin().ClusterStatus(ctx)
			cl.Close()
			if err != nil {
				last = err
				continue
			}
			alive := 0
			for _, n := range st.Nodes {
				if n.Alive {
					alive++
				}
			}
			if alive >= c.Size() {
				return nil
			}
			last = fmt.Errorf("node %d sees %d of %d nodes alive", i, alive, c.Size())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("torture: the cluster did not form within %s: %w", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// MetaLeaderOf returns the node that leads the cluster metadata, where the
// consumer groups' coordinator runs: the coordinator group's description
// names (group must have members, or have had some since the coordinator
// started).
func MetaLeaderOf(ctx context.Context, c Cluster, group string) (int, error) {
	var lastErr error
	for i := range c.Size() {
		cl, err := client.Dial(c.Addr(i), client.WithCallTimeout(2*time.Second))
		if err != nil {
			lastErr = err
			continue
		}
		d, err := cl.Admin().DescribeGroup(ctx, group)
		cl.Close()
		if err != nil {
			lastErr = err
			continue
		}
		for j := range c.Size() {
			own := c.Addr(j)
			if na, ok := c.(NodeAddresser); ok {
				own = na.NodeAddr(j)
			}
			if own == d.Coordinator {
				return j, nil
			}
		}
		return 0, fmt.Errorf("torture: group %s's coordinator %s is not a node of this cluster", group, d.Coordinator)
	}
	return 0, fmt.Errorf("torture: no node described group %s: %w", group, lastErr)
}
