package broker

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
	"github.com/logd/logd/retention"
)

// raftPlane is the control plane of a node in a cluster (package
// cluster): topics, committed offsets, users and ACLs are the replicated
// metadata's, written on the metadata leader; a partition is served by
// its Raft group's leader. A topic write this node's metadata group
// refuses for not leading it is passed on to the leader over the peer
// service (peer.go).
type raftPlane struct {
	cl *cluster.Cluster
}

func (r *raftPlane) cluster() *cluster.Cluster   { return r.cl }
func (r *raftPlane) offsetStore() *offsets.Store { return r.cl.Offsets() }
func (r *raftPlane) close() error                { return r.cl.Close() }
func (r *raftPlane) alone() bool                 { return false }
func (r *raftPlane) run(self Node)               { r.cl.Run(self) }
func (r *raftPlane) onMetaLeader() error         { return r.cl.OnMetaLeader() }

func (r *raftPlane) groupHandover(ctx context.Context, b *Broker) (groups.StateStore, map[string][]byte, error) {
	if err := r.cl.MetaLinearizable(ctx); err != nil {
		return nil, nil, err
	}
	recorded := map[string][]byte{}
	for name, rec := range r.cl.GroupStates() {
		recorded[name] = rec.Value
	}
	return groupStates{b: b, cl: r.cl}, recorded, nil
}

func (r *raftPlane) identify(self Node) Node {
	self.ID, self.KafkaID, self.RaftAddr = r.cl.Self(), meta.KafkaIDOf(r.cl.Self()), r.cl.RaftAddr()
	return self
}

// localNode takes the Kafka id the metadata gives n.
func (r *raftPlane) localNode(n Node) Node {
	if m, ok := r.cl.Members()[n.ID]; ok && m.KafkaID != 0 {
		n.KafkaID = m.KafkaID
	}
	return n
}

// nodes are the members as this node has applied the metadata, in id
// order.
func (r *raftPlane) nodes(Node) []Node {
	var out []Node
	for _, n := range r.cl.Members() {
		if n.KafkaID == 0 {
			n.KafkaID = meta.KafkaIDOf(n.ID)
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (r *raftPlane) live(id string) bool { return r.cl.Reachable(id) }

func (r *raftPlane) members() []string {
	var ids []string
	for id := range r.cl.Members() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (r *raftPlane) join(ctx context.Context, n Node, rejoin bool) error {
	return r.cl.Join(ctx, n, rejoin)
}

func (r *raftPlane) removeNode(ctx context.Context, id string) ([]string, error) {
	return r.cl.RemoveNode(ctx, id)
}

func (r *raftPlane) status(ctx context.Context, self Node, local bool) cluster.Status {
	if local {
		return r.cl.LocalStatus(self)
	}
	return r.cl.Status(ctx, self)
}

func (r *raftPlane) createTopic(ctx context.Context, pr Principal, cfg partition.TopicConfig) (partition.TopicConfig, error) {
	c, err := r.cl.CreateTopic(ctx, cfg)
	if addr, ok := passOn(ctx, err); ok {
		if c, err = peerCreateTopic(ctx, r.cl, addr, pr, cfg); err == nil {
			err = r.awaitTopic(ctx, c.Name, c.Partitions)
		}
	}
	return c, err
}

func (r *raftPlane) alterTopic(ctx context.Context, pr Principal, name string, ch partition.ConfigChange) (partition.TopicConfig, error) {
	c, err := r.cl.AlterTopic(ctx, name, ch)
	if addr, ok := passOn(ctx, err); ok {
		c, err = peerAlterTopic(ctx, r.cl, addr, pr, name, ch)
	}
	return c, err
}

func (r *raftPlane) addPartitions(ctx context.Context, pr Principal, topic string, count int32) (partition.TopicConfig, error) {
	cfg, err := r.cl.AddPartitions(ctx, topic, count)
	if addr, ok := passOn(ctx, err); ok {
		if cfg, err = peerAddPartitions(ctx, r.cl, addr, pr, topic, count); err == nil {
			err = r.awaitTopic(ctx, topic, count)
		}
	}
	return cfg, err
}

func (r *raftPlane) deleteTopic(ctx context.Context, pr Principal, name string) error {
	err := r.cl.DeleteTopic(ctx, name)
	if addr, ok := passOn(ctx, err); ok {
		return peerDeleteTopic(ctx, r.cl, addr, pr, name)
	}
	return err
}

func (r *raftPlane) awaitTopic(ctx context.Context, name string, partitions int32) error {
	return r.cl.AwaitTopic(ctx, name, partitions)
}

// topicLookup: see cluster.TopicLookup (this node may not have the topic
// yet).
func (r *raftPlane) topicLookup(ctx context.Context, topic string, err error) error {
	return r.cl.TopicLookup(ctx, topic, err)
}

// describe takes each partition's replicas from the metadata, its leader
// and epoch from this node's replica, and with fromLeaders its log bounds
// from its leader (leaderBounds).
func (r *raftPlane) describe(ctx context.Context, c partition.TopicConfig, parts []*partition.Partition, pis []PartitionInfo, fromLeaders bool) {
	st := r.cl.State()
	for i, p := range parts {
		pi := &pis[i]
		pi.Leader, pi.Replicas, pi.ISR = "", nil, nil
		if mt, ok := st.Topics[c.Name]; ok && int(p.ID) < len(mt.Replicas) {
			pi.Replicas = append([]string(nil), mt.Replicas[p.ID]...)
			pi.ISR = pi.Replicas
		}
		if rep := r.cl.LocalReplica(meta.GroupOf(c, p.ID)); rep != nil {
			leader, term := r.cl.LeaderOf(rep.Status(), pi.Replicas)
			pi.Leader, pi.LeaderEpoch = leader, int32(term)
		}
	}
	if fromLeaders {
		leaderBounds(ctx, parts, pis, r.cl.PartitionLog, describeLookupTimeout)
	}
}

// leads: only the leader knows the high watermark for sure (a follower's
// may lag, and a new leader's until Leads proves it).
func (r *raftPlane) leads(ctx context.Context, p *partition.Partition) bool {
	return r.cl.Leads(ctx, p)
}

func (r *raftPlane) awaitLeader(ctx context.Context, p *partition.Partition, max time.Duration) {
	r.cl.AwaitLeader(ctx, p, max)
}

func (r *raftPlane) mustLead(ctx context.Context, p *partition.Partition) error {
	_, err := r.cl.Replica(ctx, p)
	return err
}

// readable: only the leader serves reads (a follower may lag behind what
// was acknowledged), and a read that may come back empty first confirms
// the leadership (current) so it cannot miss a record another leader
// acknowledged. A fetch below the high watermark returns committed
// records whatever the proof, so it needs none.
func (r *raftPlane) readable(ctx context.Context, p *partition.Partition, offset int64) error {
	if offset < p.Log.HighWatermark() {
		return r.mustLead(ctx, p)
	}
	return r.current(ctx, p)
}

// current: this node leads p and a barrier started after the call
// committed and was applied here (cluster.Linearizable). The high
// watermark is no proof: a leader still applying what was committed
// before its term (after a restart, or a follower's late commit notice)
// moves it on every entry it applies, while it is behind what its
// predecessor acknowledged.
func (r *raftPlane) current(ctx context.Context, p *partition.Partition) error {
	rep, err := r.cl.Replica(ctx, p)
	if err != nil {
		return err
	}
	return r.cl.Linearizable(ctx, rep, "partition "+p.Name())
}

func (r *raftPlane) partitionLog(ctx context.Context, p *partition.Partition) (offsets.PartitionLog, error) {
	return r.cl.PartitionLog(ctx, p)
}

func (r *raftPlane) leaderOffset(ctx context.Context, p *partition.Partition, spec int64) (*cluster.PartitionOffset, error) {
	return r.cl.ListOffset(ctx, p, spec)
}

// deleteRecords moves the start on every replica through the partition's
// Raft group, from its leader.
func (r *raftPlane) deleteRecords(ctx context.Context, p *partition.Partition, offset int64) (int64, error) {
	rep, err := r.cl.Replica(ctx, p)
	if err != nil {
		return 0, err
	}
	start, err := rep.DeleteRecords(ctx, offset)
	if err != nil {
		return 0, r.cl.RaftError(err)
	}
	return start, nil
}

// retentionLog: a partition without a replica here is not trimmed here.
func (r *raftPlane) retentionLog(c partition.TopicConfig, p *partition.Partition) (retention.Log, bool) {
	rep := r.cl.LocalReplica(meta.GroupOf(c, p.ID))
	if rep == nil {
		return nil, false
	}
	return raftTrimmed{p.Log, rep}, true
}

// raftTrimmed is a replicated partition's log as retention sees it:
// segments are deleted below the replica's TrimLimit only, never an entry
// Raft still needs to replay after a restart.
type raftTrimmed struct {
	*log.Log
	r *replication.Replica
}

func (l raftTrimmed) DeleteSegmentsBefore(offset int64) ([]log.SegmentInfo, error) {
	limit, err := l.r.TrimLimit()
	if err != nil {
		return nil, err
	}
	return l.Log.DeleteSegmentsBefore(min(offset, limit))
}

func (r *raftPlane) metaLeader() (Node, bool) {
	if r.cl.IsMetaLeader() {
		return Node{}, true
	}
	return r.cl.MetaLeader(), false
}

func (r *raftPlane) metaTerm() uint64 { return r.cl.MetaTerm() }

// currentMeta: on the metadata leader after a read barrier;
// *NotLeaderError elsewhere.
func (r *raftPlane) currentMeta(ctx context.Context) error {
	if !r.cl.IsMetaLeader() {
		return &NotLeaderError{What: "the cluster metadata", Leader: r.cl.MetaLeader(), Untouched: true}
	}
	return r.cl.MetaLinearizable(ctx)
}

func (r *raftPlane) commitOffsets(ctx context.Context, group string, cs []offsets.Committed) error {
	return r.cl.CommitOffsets(ctx, group, cs)
}

func (r *raftPlane) recordGeneration(ctx context.Context, group string, gen int32) error {
	return r.cl.RecordGeneration(ctx, group, gen)
}

func (r *raftPlane) deleteGroupOffsets(ctx context.Context, group string) error {
	return r.cl.DeleteGroupOffsets(ctx, group)
}

func (r *raftPlane) user(name string) ([]byte, bool) { return r.cl.Auth().User(name) }
func (r *raftPlane) users() []string                 { return r.cl.Auth().Users() }
func (r *raftPlane) acls() (uint64, [][]byte)        { return r.cl.Auth().ACLs() }
func (r *raftPlane) aclGen() uint64                  { return r.cl.Auth().AuthGen() }

func (r *raftPlane) putUser(ctx context.Context, user string, enc []byte, replace bool) error {
	cmd := &meta.Command{Op: meta.OpPutUser, Name: user, Value: enc}
	return r.cl.ApplyAuth(ctx, cmd, func(f *meta.FSM) error {
		if _, ok := f.User(user); ok && !replace {
			return errUserExists(user)
		}
		return nil
	})
}

func (r *raftPlane) deleteUser(ctx context.Context, user string) error {
	return r.cl.ApplyAuth(ctx, &meta.Command{Op: meta.OpDeleteUser, Name: user}, func(f *meta.FSM) error {
		if _, ok := f.User(user); !ok {
			return errUnknownUser(user)
		}
		return nil
	})
}

func (r *raftPlane) addACLs(ctx context.Context, enc [][]byte) error {
	return r.cl.ApplyAuth(ctx, &meta.Command{Op: meta.OpAddACLs, ACLs: enc}, nil)
}

// removeACLs picks the ACLs to remove as the metadata holds them when the
// write runs (on the metadata leader, after its barrier).
func (r *raftPlane) removeACLs(ctx context.Context, match func(all [][]byte) [][]byte) error {
	cmd := &meta.Command{Op: meta.OpRemoveACLs}
	return r.cl.ApplyAuth(ctx, cmd, func(m *meta.FSM) error {
		_, all := m.ACLs()
		cmd.ACLs = match(all)
		if len(cmd.ACLs) == 0 {
			return errNoACLMatch
		}
		return nil
	})
}
