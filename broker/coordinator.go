package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
)

// coordinator holds the node's group coordinator (docs/groups.md, "Wiring
// in the core"): on a node that runs alone, always; in a cluster on the
// metadata leader only, made when first asked for there (taking over the
// groups recorded in the metadata) and closed when the node is found no
// longer leading (asked, or by watch within a second; its members then
// carry on at the new leader). watch also has it rebalance groups whose
// topics changed their partition count.
type coordinator struct {
	b      *Broker
	mu     sync.Mutex
	c      *groups.Coordinator
	closed bool
}

// Coordinator is the node's consumer-group coordinator, or
// *NotCoordinatorError naming the metadata leader on a node of a cluster
// that does not lead it. It authorizes nothing: it is for tests that drive
// the coordinator directly; the front-ends use groups.go's methods.
func (b *Broker) Coordinator() (*groups.Coordinator, error) {
	return b.coord.get()
}

func (k *coordinator) get() (*groups.Coordinator, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, kind.ErrShuttingDown
	}
	if leader, leads := k.b.plane.metaLeader(); !leads {
		if k.c != nil {
			k.c.Close()
			k.c = nil
			k.b.consumers.forget()
		}
		return nil, &NotCoordinatorError{Leader: leader}
	}
	if k.c == nil {
		c, err := k.newCoordinator()
		if err != nil {
			return nil, err
		}
		k.c = c
	}
	return k.c, nil
}

// restoreTimeout bounds the read barrier a new coordinator of a cluster
// waits for before it takes the groups over.
const restoreTimeout = 5 * time.Second

// newCoordinator makes the node's coordinator. In a cluster it records
// each completed generation in the metadata (groupStates) and takes over
// every group recorded there, once the metadata this node applied is
// current (a barrier: a new leader may still be applying its
// predecessor's log), so the members of the previous coordinator carry on
// with their ids, generation and assignments. A node that runs alone
// records them in its DB, and takes them over when it restarts.
func (k *coordinator) newCoordinator() (*groups.Coordinator, error) {
	cfg := groups.Config{
		Partitions:            k.b.partitionCount,
		InitialRebalanceDelay: 3 * time.Second,
		Generations:           generations{k.b},
	}
	ctx, cancel := context.WithTimeout(context.Background(), restoreTimeout)
	defer cancel()
	store, recorded, err := k.b.plane.groupHandover(ctx, k.b)
	if err != nil {
		var nl *NotLeaderError
		if errors.As(err, &nl) {
			return nil, &NotCoordinatorError{Leader: nl.Leader}
		}
		return nil, err
	}
	cfg.States = store
	c := groups.New(cfg)
	k.b.takeOverConsumerGroups(recorded)
	for name, rec := range recorded {
		if isConsumerRecord(rec) {
			continue // a server-assigned group's, taken over above
		}
		if err := k.restore(c, name, rec); err != nil {
			k.b.logger.Warn("a consumer group's recorded membership is not taken over: its members join it again",
				"group", name, "err", err)
		}
	}
	return c, nil
}

// restore has c take over group as its record enc says, with the
// generation recorded for it.
func (k *coordinator) restore(c *groups.Coordinator, group string, enc []byte) error {
	st, err := groups.DecodeGroupState(enc)
	if err != nil {
		return err
	}
	if st.Group != group {
		return fmt.Errorf("the record of group %q names group %q", group, st.Group)
	}
	recorded, err := k.b.offsets.Generation(group)
	if err != nil {
		return err
	}
	return c.Restore(st, recorded)
}

// groupStates is a cluster's groups.StateStore: each group's completed
// generation goes to the metadata (meta.OpGroupState), where the next
// metadata leader's coordinator finds it.
type groupStates struct {
	b  *Broker
	cl *cluster.Cluster
}

// Save records st (its removal when it has no member).
func (s groupStates) Save(ctx context.Context, st groups.GroupState) error {
	var enc []byte
	if len(st.Members) > 0 {
		enc = groups.EncodeGroupState(st)
	}
	err := s.cl.RecordGroupState(ctx, st.Group, st.Generation, enc)
	if err != nil {
		s.b.logger.Warn("could not record a consumer group's generation; its members learn their assignments once it is",
			"group", st.Group, "generation", st.Generation, "err", err)
	}
	return err
}

// generations is the node's groups.GenerationStore: a group's generations
// are recorded where its committed offsets are, on a single node in its
// Pebble DB (synced), in a cluster through the metadata group
// (meta.OpGroupGeneration), so a restarted node, or the next metadata
// leader, continues above them.
type generations struct{ b *Broker }

// Next records the generation after the larger of after and the group's
// recorded one. In a cluster the leader's copy of the record may lag (a
// new leader still applying its predecessor's log): a number found taken
// is tried again above the record, which by then includes everything
// applied before the refused write.
func (s generations) Next(ctx context.Context, group string, after int32) (int32, error) {
	for try := 0; ; try++ {
		floor, err := s.b.offsets.Generation(group)
		if err != nil {
			return 0, err
		}
		n, err := groups.NextGeneration(group, max(after, floor))
		if err != nil {
			return 0, err
		}
		err = s.b.plane.recordGeneration(ctx, group, n)
		if errors.Is(err, offsets.ErrGenerationTaken) && try < 3 {
			continue
		}
		if err != nil {
			s.b.logger.Warn("could not record a consumer group's generation; its rebalance waits and retries",
				"group", group, "generation", n, "err", err)
			return 0, err
		}
		return n, nil
	}
}

// partitionCount is a topic's partition count, 0 when it does not exist
// here (the coordinator's Config.Partitions).
func (b *Broker) partitionCount(topic string) int32 {
	c, err := b.topics.Config(topic)
	if err != nil {
		return 0
	}
	return c.Partitions
}

// watch, every second until ctx ends, closes the coordinator when it
// finds this node of a cluster no longer leading the metadata group
// (members blocked in it return ErrCoordinatorClosed and re-join at the
// new leader, even if no request reaches this node meanwhile), and has the
// coordinator rebalance the groups whose subscribed topics changed their
// partition count (a topic deleted, or given more partitions, by whatever
// path: groups.Coordinator.CheckPartitions).
func (k *coordinator) watch(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		k.mu.Lock()
		if k.c != nil {
			if _, leads := k.b.plane.metaLeader(); !leads {
				k.c.Close()
				k.c = nil
				k.b.consumers.forget()
			}
		}
		c := k.c
		k.mu.Unlock()
		if c != nil {
			if gs, err := c.CheckPartitions(); err == nil && len(gs) > 0 { // closed meanwhile: the next tick sees it
				k.b.logger.Info("rebalancing consumer groups: a subscribed topic changed its partition count", "groups", gs)
			}
			k.b.sweepConsumerGroups(ctx)
		}
	}
}

func (k *coordinator) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if k.c != nil {
		k.c.Close()
		k.c = nil
	}
}

// validateCommit checks an offset commit with the coordinator where this
// node has one (groups.Coordinator.ValidateCommit), or with the
// server-assigned group of that name (consumer_describe.go).
func (k *coordinator) validateCommit(group, member string, generation int32) error {
	k.mu.Lock()
	c := k.c
	k.mu.Unlock()
	if c == nil && (member != "" || generation >= 0) {
		// Made first (taking the recorded groups over, the
		// server-assigned ones too) for a member's commit.
		var err error
		if c, err = k.get(); err != nil {
			return err
		}
	}
	if handled, err := k.b.consumers.validateCommit(group, member, generation); handled {
		return err
	}
	if c == nil {
		return nil // no coordinator here has members of any group
	}
	return c.ValidateCommit(group, member, generation)
}

// checkPartitions has the coordinator, where this node has one, rebalance
// the groups whose subscribed topics changed their partition count
// (groups.Coordinator.CheckPartitions): at once after a topic change made
// here (why, for the log), rather than at watch's next tick. A coordinator
// made later knows no group: its members join afresh and get every
// partition the topics have then.
func (k *coordinator) checkPartitions(why string) {
	k.mu.Lock()
	c := k.c
	k.mu.Unlock()
	if c == nil {
		return
	}
	if gs, err := c.CheckPartitions(); err == nil && len(gs) > 0 {
		k.b.logger.Info("rebalancing consumer groups: a subscribed topic "+why, "groups", gs)
	}
}

// collector reports the current coordinator's metrics.
func (k *coordinator) collector() prometheus.Collector { return coordCollector{k} }

type coordCollector struct{ k *coordinator }

func (c coordCollector) Describe(ch chan<- *prometheus.Desc) {
	// Unchecked: the coordinator (and so its descriptors) comes and goes.
}

func (c coordCollector) Collect(ch chan<- prometheus.Metric) {
	c.k.mu.Lock()
	gc := c.k.c
	c.k.mu.Unlock()
	if gc != nil {
		gc.Collector().Collect(ch)
	}
}
