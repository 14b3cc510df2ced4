package broker

import (
	"context"
	"errors"
	"time"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
	"github.com/logd/logd/retention"
)

// controlPlane is what the broker asks of the node's control plane: where
// topics, committed offsets, users and ACLs are written, who the members
// are, who leads a partition and whether a read there is current. Open
// chooses one implementation for the node's life: localPlane on a node
// that runs alone (controlplane_local.go: the node's partition.Topics,
// offsets.Store and Pebble store), raftPlane in a cluster
// (controlplane_cluster.go: package cluster, over the replicated
// metadata). The broker's methods do what both share (authorization, the
// disk guard, the checks of a request) and call it once per request, or
// once per partition of one. The produce path makes no call of it per
// batch: startAppend tells a Raft append from a local one by the plane's
// type, and awaitLeader is called only after a produce woke a sleeping
// group.
type controlPlane interface {
	// cluster is the node's *cluster.Cluster, nil on a node that runs
	// alone (Broker.Cluster).
	cluster() *cluster.Cluster
	// offsetStore is where committed offsets and generations are read.
	offsetStore() *offsets.Store
	// groupHandover is where a new group coordinator records each
	// completed generation, and the groups recorded there for it to take
	// over (encoded groups.GroupState by group): on a node that runs
	// alone its DB's; in a cluster the metadata's, once what this node
	// applied is current (a read barrier; *NotLeaderError on a node that
	// does not lead the metadata).
	groupHandover(ctx context.Context, b *Broker) (groups.StateStore, map[string][]byte, error)
	// recordConsumerState writes a server-assigned group's record (nil:
	// removes it) where groupHandover finds it (consumer_state.go).
	recordConsumerState(ctx context.Context, group string, epoch int32, enc []byte) error
	// identify fills in self's id, Kafka id and Raft address; run starts
	// the background work once the front-ends listen; close stops it (the
	// logs and the Pebble store stay open).
	identify(self Node) Node
	run(self Node)
	close() error
	// alone: no other node can ever lead the metadata (a failed metadata
	// write is not retried for a leader to come).
	alone() bool

	// Membership and status.
	localNode(n Node) Node
	nodes(self Node) []Node
	// live reports whether node id is up as far as this node knows.
	live(id string) bool
	members() []string
	join(ctx context.Context, n Node, rejoin bool) error
	removeNode(ctx context.Context, id string) ([]string, error)
	status(ctx context.Context, self Node, local bool) cluster.Status

	// Topics: writes (pr is the requester, for a write passed on to the
	// metadata leader), waiting for one, and a topic this node lacks.
	createTopic(ctx context.Context, pr Principal, cfg partition.TopicConfig) (partition.TopicConfig, error)
	alterTopic(ctx context.Context, pr Principal, name string, ch partition.ConfigChange) (partition.TopicConfig, error)
	addPartitions(ctx context.Context, pr Principal, topic string, count int32) (partition.TopicConfig, error)
	deleteTopic(ctx context.Context, pr Principal, name string) error
	awaitTopic(ctx context.Context, name string, partitions int32) error
	topicLookup(ctx context.Context, topic string, err error) error
	// describe fills in each partition's leader, replicas and epoch (pis
	// holds this node's view as a node that runs alone has it), and with
	// fromLeaders its leader's log bounds.
	describe(ctx context.Context, c partition.TopicConfig, parts []*partition.Partition, pis []PartitionInfo, fromLeaders bool)

	// Who leads a partition, and whether a read there is current.
	// leads: this node leads p, proven; mustLead: nil when it does, else
	// *NotLeaderError; readable: a fetch at offset may be served here,
	// current; current: any read of p here reflects every record
	// acknowledged before the call, whatever the high watermark does
	// meanwhile (a read of the log's end, or of state derived from the
	// whole log, asks current, never readable at the high watermark);
	// partitionLog: p's log as its leader has it; leaderOffset:
	// spec resolved by p's leader elsewhere (nil: this node's log
	// answers); retentionLog: p's log as retention may trim it (false:
	// no replica here).
	leads(ctx context.Context, p *partition.Partition) bool
	// awaitLeader waits up to max for p to have a leader, after a use
	// woke its sleeping group (cluster.AwaitLeader).
	awaitLeader(ctx context.Context, p *partition.Partition, max time.Duration)
	mustLead(ctx context.Context, p *partition.Partition) error
	readable(ctx context.Context, p *partition.Partition, offset int64) error
	current(ctx context.Context, p *partition.Partition) error
	partitionLog(ctx context.Context, p *partition.Partition) (offsets.PartitionLog, error)
	leaderOffset(ctx context.Context, p *partition.Partition, spec int64) (*cluster.PartitionOffset, error)
	deleteRecords(ctx context.Context, p *partition.Partition, offset int64) (int64, error)
	// shares is where share partitions' states are kept (share_store.go).
	shares(b *Broker) shareStore
	// The share groups' configurations (share_config.go): a group's
	// encoded configuration (nil: the defaults) with the count of changes
	// it is of, that count alone, and a change, made where the control
	// plane's writes are (on the metadata leader in a cluster: elsewhere
	// *NotLeaderError, Untouched).
	shareGroupConfig(group string) (enc []byte, gen uint64)
	shareGroupConfigGen() uint64
	putShareGroupConfig(ctx context.Context, group string, enc []byte) error
	retentionLog(c partition.TopicConfig, p *partition.Partition) (retention.Log, bool)

	// The metadata leader: whether this node leads (and who does),
	// onMetaLeader's answer, a current read of the metadata, and the
	// writes of committed offsets and generations.
	metaLeader() (leader Node, leads bool)
	// metaTerm is the metadata leader's term (0 on a node that runs
	// alone): memory built from the metadata in one term is stale in
	// another, even on the same node.
	metaTerm() uint64
	onMetaLeader() error
	currentMeta(ctx context.Context) error
	commitOffsets(ctx context.Context, group string, cs []offsets.Committed) error
	recordGeneration(ctx context.Context, group string, gen int32) error
	deleteGroupOffsets(ctx context.Context, group string) error
	// deleteOffsets deletes a group's committed offsets of the partitions
	// named (offsetdelete.go).
	deleteOffsets(ctx context.Context, group string, cs []offsets.Committed) error
	// The transaction coordinator's records (txn_plane.go): putTxn
	// stores one durably (on the metadata leader in a cluster, applied
	// only from an entry of term, the coordinator's: meta.Command.Term),
	// txnRecords reads them all, current.
	putTxn(ctx context.Context, id string, enc []byte, term uint64) error
	txnRecords(ctx context.Context) (map[string][]byte, error)

	// Users and ACLs, encoded (authstore.go): reads are local, writes
	// durable. putUser refuses an existing user unless replace
	// (errUserExists); deleteUser an unknown one (errUnknownUser).
	// removeACLs removes what match picks from the stored ACLs, or
	// answers errNoACLMatch when it picks none (it may instead remove
	// nothing and answer nil).
	user(name string) ([]byte, bool)
	users() []string
	putUser(ctx context.Context, name string, enc []byte, replace bool) error
	deleteUser(ctx context.Context, name string) error
	acls() (gen uint64, enc [][]byte)
	aclGen() uint64
	addACLs(ctx context.Context, enc [][]byte) error
	removeACLs(ctx context.Context, match func(all [][]byte) [][]byte) error

	// The client quotas by entity key (quota.go): read locally (with the
	// generation aclGen counts), written durably.
	quotas() (gen uint64, qs map[string]map[string]float64)
	alterQuota(ctx context.Context, key string, alt meta.QuotaAlteration) error

	// preferLeader moves p's leadership to its preferred replica now
	// (elect.go): notNeeded when that replica leads it already.
	preferLeader(ctx context.Context, p *partition.Partition) (notNeeded bool, err error)
	// movePartition sets a partition's replicas (on the metadata leader);
	// moves lists the partitions being moved (reassign.go).
	movePartition(ctx context.Context, m PartitionMove) error
	moves() []PartitionMove
}

var (
	_ controlPlane = (*localPlane)(nil)
	_ controlPlane = (*raftPlane)(nil)
)

// errNoACLMatch ends a removal that matched nothing before it is proposed.
var errNoACLMatch = errors.New("no ACL matches")
