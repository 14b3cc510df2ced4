package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/retention"
)

// localPlane is the control plane of a node that runs alone: it leads
// every partition and the metadata, its topics are its partition.Topics,
// its committed offsets its offsets.Store, and its users and ACLs live in
// its Pebble store, where topics live too: keys "auth/user/<name>" (value:
// the encoded credentials) and "auth/acl/<encoded ACL>" (empty value),
// written with sync and mirrored in memory.
type localPlane struct {
	topics  *partition.Topics
	offsets *offsets.Store
	db      *pebble.DB

	mu       sync.Mutex        // serializes user and ACL writes
	creds    map[string][]byte // user -> encoded credentials
	aclSet   [][]byte          // encoded ACLs: sorted, unique
	gen      atomic.Uint64     // counts changes of users, ACLs and quotas
	q        localQuotas       // the client quotas (quota_local.go)
	shareGen atomic.Uint64     // counts share group configuration writes (share_config.go)
}

const (
	userKeyPrefix = "auth/user/"
	aclKeyPrefix  = "auth/acl/"
)

// newLocalPlane loads the users and ACLs from db.
func newLocalPlane(dataDir string, db *pebble.DB, topics *partition.Topics) (*localPlane, error) {
	l := &localPlane{topics: topics, offsets: offsets.New(db, offsets.Options{}), db: db, creds: map[string][]byte{}}
	if err := l.load(); err != nil {
		return nil, fmt.Errorf("load users and ACLs from %s/meta: %w", dataDir, err)
	}
	return l, nil
}

// load reads the users and ACLs from Pebble.
func (l *localPlane) load() error {
	for _, pre := range []string{userKeyPrefix, aclKeyPrefix} {
		it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte(pre), UpperBound: prefixEnd(pre)})
		if err != nil {
			return err
		}
		for it.First(); it.Valid(); it.Next() {
			rest := bytes.Clone(it.Key()[len(pre):])
			if pre == userKeyPrefix {
				l.creds[string(rest)] = bytes.Clone(it.Value())
			} else {
				l.aclSet = append(l.aclSet, rest)
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return err
		}
	}
	return nil
}

// prefixEnd is the least key above every key with prefix pre.
func prefixEnd(pre string) []byte {
	b := []byte(pre)
	b[len(b)-1]++
	return b
}

func (l *localPlane) cluster() *cluster.Cluster { return nil }

// groupHandover: the coordinator records each group's generation in the
// node's DB, and the coordinator of a restarted node takes the groups
// recorded there over, so their members carry on across the restart.
func (l *localPlane) groupHandover(context.Context, *Broker) (groups.StateStore, map[string][]byte, error) {
	recorded, err := l.offsets.GroupStates()
	if err != nil {
		return nil, nil, err
	}
	return localStates{l.offsets}, recorded, nil
}

// localStates is a node's groups.StateStore when it runs alone: its
// Pebble DB, synced.
type localStates struct{ offsets *offsets.Store }

// Save records st (its removal when it has no member).
func (s localStates) Save(_ context.Context, st groups.GroupState) error {
	var enc []byte
	if len(st.Members) > 0 {
		enc = groups.EncodeGroupState(st)
	}
	return s.offsets.SaveGroupState(st.Group, enc)
}

func (l *localPlane) offsetStore() *offsets.Store       { return l.offsets }
func (l *localPlane) identify(self Node) Node           { self.ID, self.KafkaID = SelfID, 1; return self }
func (l *localPlane) run(Node)                          {}
func (l *localPlane) close() error                      { return nil }
func (l *localPlane) alone() bool                       { return true }
func (l *localPlane) localNode(n Node) Node             { return n }
func (l *localPlane) nodes(self Node) []Node            { return []Node{self} }
func (l *localPlane) live(string) bool                  { return true }
func (l *localPlane) members() []string                 { return nil }
func (l *localPlane) metaLeader() (Node, bool)          { return Node{}, true }
func (l *localPlane) onMetaLeader() error               { return nil }
func (l *localPlane) currentMeta(context.Context) error { return nil }
func (l *localPlane) metaTerm() uint64                  { return 0 }

// errAlone is the answer to cluster membership changes on a node that
// runs alone.
func errAlone(more string) error {
	return kind.Errorf(kind.ErrFailedPrecondition, "this node runs alone, not in a cluster%s", more)
}

func (l *localPlane) join(context.Context, Node, bool) error {
	return errAlone(": restart it with --node-id, --raft-addr and --bootstrap to start one")
}

func (l *localPlane) removeNode(context.Context, string) ([]string, error) {
	return nil, errAlone("")
}

// status: this node leads every partition.
func (l *localPlane) status(_ context.Context, self Node, _ bool) cluster.Status {
	st := cluster.Status{Self: SelfID, Nodes: []cluster.NodeStatus{{Node: self, Alive: true}}}
	for _, c := range l.topics.List() {
		for i := range c.Partitions {
			st.Partitions = append(st.Partitions, cluster.ReplicaStatus{Topic: c.Name, Partition: i,
				Leader: SelfID, Replicas: []string{SelfID}, RaftState: "Leader (single node)"})
		}
	}
	return st
}

func (l *localPlane) createTopic(_ context.Context, _ Principal, cfg partition.TopicConfig) (partition.TopicConfig, error) {
	_, err := l.topics.Config(cfg.Name)
	cfg, err = cluster.CheckNewTopic(cfg, err == nil, 1, true)
	if err != nil {
		return cfg, err
	}
	// Offsets left by a deleted topic of the same name (a crash between the
	// two steps of DeleteTopic) must not pass to the new one.
	if err := l.offsets.DeleteTopic(cfg.Name); err != nil {
		return cfg, err
	}
	return l.topics.Create(cfg)
}

func (l *localPlane) alterTopic(_ context.Context, _ Principal, name string, ch partition.ConfigChange) (partition.TopicConfig, error) {
	return l.topics.Alter(name, ch)
}

func (l *localPlane) addPartitions(_ context.Context, _ Principal, topic string, count int32) (partition.TopicConfig, error) {
	return l.topics.AddPartitions(topic, count)
}

func (l *localPlane) deleteTopic(_ context.Context, _ Principal, name string) error {
	if err := l.topics.Delete(name); err != nil {
		return err
	}
	return l.offsets.DeleteTopic(name)
}

// awaitTopic: a single node has nothing to wait for.
func (l *localPlane) awaitTopic(context.Context, string, int32) error { return nil }

// topicLookup: a topic this node does not have does not exist.
func (l *localPlane) topicLookup(_ context.Context, _ string, err error) error { return err }

// describe: this node's view is the whole truth.
func (l *localPlane) describe(context.Context, partition.TopicConfig, []*partition.Partition, []PartitionInfo, bool) {
}

func (l *localPlane) leads(context.Context, *partition.Partition) bool                 { return true }
func (l *localPlane) awaitLeader(context.Context, *partition.Partition, time.Duration) {}
func (l *localPlane) mustLead(context.Context, *partition.Partition) error             { return nil }
func (l *localPlane) readable(context.Context, *partition.Partition, int64) error      { return nil }
func (l *localPlane) current(context.Context, *partition.Partition) error              { return nil }

func (l *localPlane) partitionLog(_ context.Context, p *partition.Partition) (offsets.PartitionLog, error) {
	return p.Log, nil
}

func (l *localPlane) leaderOffset(context.Context, *partition.Partition, int64) (*cluster.PartitionOffset, error) {
	return nil, nil
}

// deleteRecords moves the log's start (-1: to its high watermark).
func (l *localPlane) deleteRecords(_ context.Context, p *partition.Partition, offset int64) (int64, error) {
	if offset == -1 {
		offset = p.Log.HighWatermark()
	}
	return p.Log.AdvanceStart(offset)
}

func (l *localPlane) retentionLog(_ partition.TopicConfig, p *partition.Partition) (retention.Log, bool) {
	return p.Log, true
}

func (l *localPlane) commitOffsets(_ context.Context, group string, cs []offsets.Committed) error {
	return l.offsets.Commit(group, cs)
}

func (l *localPlane) recordGeneration(_ context.Context, group string, gen int32) error {
	return l.offsets.RecordGeneration(group, gen)
}

func (l *localPlane) deleteGroupOffsets(_ context.Context, group string) error {
	return l.offsets.DeleteGroup(group)
}

func (l *localPlane) user(name string) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.creds[name]
	return b, ok
}

func (l *localPlane) users() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.creds))
	for u := range l.creds {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

func (l *localPlane) putUser(_ context.Context, user string, enc []byte, replace bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.creds[user]; ok && !replace {
		return errUserExists(user)
	}
	if err := l.db.Set([]byte(userKeyPrefix+user), enc, pebble.Sync); err != nil {
		return err
	}
	l.creds[user] = enc
	l.gen.Add(1)
	return nil
}

func (l *localPlane) deleteUser(_ context.Context, user string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.creds[user]; !ok {
		return errUnknownUser(user)
	}
	if err := l.db.Delete([]byte(userKeyPrefix+user), pebble.Sync); err != nil {
		return err
	}
	delete(l.creds, user)
	l.gen.Add(1)
	return nil
}

func (l *localPlane) acls() (uint64, [][]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen.Load(), slices.Clone(l.aclSet)
}

func (l *localPlane) aclGen() uint64 { return l.gen.Load() }

func (l *localPlane) addACLs(_ context.Context, enc [][]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	wb := l.db.NewBatch()
	defer wb.Close()
	for _, b := range enc {
		if err := wb.Set(append([]byte(aclKeyPrefix), b...), nil, nil); err != nil {
			return err
		}
	}
	if err := wb.Commit(pebble.Sync); err != nil {
		return err
	}
	for _, b := range enc {
		if i, found := slices.BinarySearchFunc(l.aclSet, b, bytes.Compare); !found {
			l.aclSet = slices.Insert(l.aclSet, i, b)
		}
	}
	l.gen.Add(1)
	return nil
}

func (l *localPlane) removeACLs(_ context.Context, match func(all [][]byte) [][]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	enc := match(l.aclSet)
	wb := l.db.NewBatch()
	defer wb.Close()
	for _, b := range enc {
		if err := wb.Delete(append([]byte(aclKeyPrefix), b...), nil); err != nil {
			return err
		}
	}
	if err := wb.Commit(pebble.Sync); err != nil {
		return err
	}
	l.aclSet = slices.DeleteFunc(l.aclSet, func(b []byte) bool {
		return slices.ContainsFunc(enc, func(e []byte) bool { return bytes.Equal(e, b) })
	})
	l.gen.Add(1)
	return nil
}
