package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// Node is a member of the cluster and the addresses it advertises ("" for
// a front-end it does not serve). KafkaID is the stable int32 the Kafka
// protocol names it by: given once, when the node is first added (see
// assignKafkaID), and kept; 0 in metadata written before it existed, until
// the node registers again.
type Node struct {
	ID        string `json:"id"`
	KafkaID   int32  `json:"kafka_id,omitempty"`
	APIAddr   string `json:"api_addr"`
	KafkaAddr string `json:"kafka_addr,omitempty"`
	HTTPAddr  string `json:"http_addr,omitempty"`
	RaftAddr  string `json:"raft_addr"`
}

// Registered reports whether n, as listed in the metadata, is self as it
// registers: the same addresses, and a Kafka id given.
func (n Node) Registered(self Node) bool {
	return n.KafkaID != 0 && n.ID == self.ID && n.APIAddr == self.APIAddr && n.KafkaAddr == self.KafkaAddr &&
		n.HTTPAddr == self.HTTPAddr && n.RaftAddr == self.RaftAddr
}

// KafkaIDOf derives a node's Kafka id from its id: FNV-1a, as a positive
// int32. assignKafkaID starts from it and skips ids taken.
func KafkaIDOf(id string) int32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	if v := int32(h.Sum32() & 0x7fffffff); v != 0 {
		return v
	}
	return 1
}

// assignKafkaID gives n the Kafka id it had, or the first free one from
// KafkaIDOf(n.ID) on: deterministic, so every replica of the state agrees.
func assignKafkaID(nodes map[string]Node, n *Node) {
	if old, ok := nodes[n.ID]; ok && old.KafkaID != 0 {
		n.KafkaID = old.KafkaID
		return
	}
	taken := map[int32]bool{}
	for id, o := range nodes {
		if id != n.ID {
			taken[o.KafkaID] = true
		}
	}
	k := KafkaIDOf(n.ID)
	for taken[k] {
		k = k%0x7fffffff + 1
	}
	n.KafkaID = k
}

// Topic is a topic's config and placement.
type Topic struct {
	Config   partition.TopicConfig `json:"config"`
	Replicas [][]string            `json:"replicas"` // per partition, preferred leader first
	Initial  [][]string            `json:"initial"`  // per partition, the bootstrap configuration
}

// GroupOf is the Raft group id of a topic's partition: it names the topic's
// incarnation (its creation time), see the package comment.
func GroupOf(c partition.TopicConfig, p int32) string {
	return "p/" + c.Name + "@" + strconv.FormatInt(c.CreatedMs, 10) + "/" + strconv.Itoa(int(p))
}

// State is the cluster's metadata.
type State struct {
	Nodes  map[string]Node  `json:"nodes"`
	Topics map[string]Topic `json:"topics"`
	// Deleted is, per topic name, the creation time (CreatedMs) of the
	// latest incarnation deleted: a replica deletes its local copy of a
	// topic only on this evidence (or a newer incarnation), never because
	// the topic is missing from a state that may not have caught up yet
	// (after a restart the state is the snapshot's until the log replays).
	Deleted map[string]int64 `json:"deleted,omitempty"`
	// Removed lists the nodes removed from the cluster (by id). A removed
	// node that comes back with its old data (a restart, or a registration
	// sent before the removal and applied after it) is refused: only a
	// node with no state, joining anew, clears its id from here.
	Removed map[string]bool `json:"removed,omitempty"`
	// ClusterID is the cluster's id, the one in each member's data
	// directory (package cluster): set once (OpSetClusterID) by the first
	// metadata leader that finds it empty, so that a node whose data
	// directory has no id file (written by a version without ids) adopts
	// its cluster's from the metadata it applies.
	ClusterID string `json:"cluster_id,omitempty"`
}

func (s State) clone() State {
	out := State{Nodes: maps.Clone(s.Nodes), Topics: make(map[string]Topic, len(s.Topics)), Deleted: maps.Clone(s.Deleted),
		Removed: maps.Clone(s.Removed), ClusterID: s.ClusterID}
	for n, t := range s.Topics {
		t.Replicas = cloneSets(t.Replicas)
		t.Initial = cloneSets(t.Initial)
		out.Topics[n] = t
	}
	return out
}

func cloneSets(s [][]string) [][]string {
	out := make([][]string, len(s))
	for i, set := range s {
		out[i] = slices.Clone(set)
	}
	return out
}

// ErrNodeRemoved refuses a node that was removed from the cluster and
// comes back with the data it had.
var ErrNodeRemoved = errors.New("node removed from the cluster")

// Op names a command.
type Op string

// Commands.
const (
	OpAddNode Op = "add_node"
	// OpRejoinNode updates the addresses of a node that has been a member
	// (it restarted with its data), and is refused (ErrNodeRemoved) for a
	// node removed since.
	OpRejoinNode    Op = "rejoin_node"
	OpRemoveNode    Op = "remove_node"
	OpCreateTopic   Op = "create_topic"
	OpAlterTopic    Op = "alter_topic"
	OpDeleteTopic   Op = "delete_topic"
	OpSetReplicas   Op = "set_replicas"
	OpAddPartitions Op = "add_partitions"
	OpCommitOffsets Op = "commit_offsets"
	OpDeleteGroup   Op = "delete_group" // every committed offset of Group
	// OpDeleteOffsets deletes Group's committed offsets of the partitions
	// Offsets names (their offsets ignored).
	OpDeleteOffsets Op = "delete_offsets"
	// OpGroupGeneration records Generation as Group's newest generation,
	// before its coordinator tells any member of it (package groups). It
	// only raises: a generation not above the recorded one changes nothing
	// and answers offsets.ErrGenerationTaken, so applying it twice is
	// harmless and two coordinators can never both record one number.
	OpGroupGeneration Op = "group_generation"
	// OpSetClusterID records Name as the cluster's id; refused
	// (ErrClusterIDSet) once the state has another.
	OpSetClusterID Op = "set_cluster_id"
)

// ErrClusterIDSet refuses a cluster id other than the one the state has.
var ErrClusterIDSet = errors.New("meta: the cluster already has another id")

// Command is one change to the state.
type Command struct {
	Op     Op     `json:"op"`
	TimeMs int64  `json:"time_ms"` // the leader's clock: commit times
	Node   *Node  `json:"node,omitempty"`
	Topic  *Topic `json:"topic,omitempty"` // create (whole), alter (Config)
	Name   string `json:"name,omitempty"`  // node id or topic name
	// set_replicas: Topic.Replicas replaces the named topic's placement.
	// add_partitions: Topic.Config.Partitions is the named topic's new
	// count, Topic.Replicas and Initial the new partitions' placement (of
	// the incarnation Topic.Config.CreatedMs).
	Group   string              `json:"group,omitempty"`
	Offsets []offsets.Committed `json:"offsets,omitempty"`
	// group_generation: the generation recorded for Group; group_state:
	// the generation Value (its encoded membership) is of.
	Generation int32 `json:"generation,omitempty"`
	// put_user: the user's encoded credentials (Name is the user);
	// group_state: the group's encoded membership (groupstate.go).
	Value []byte `json:"value,omitempty"`
	// add_acls, remove_acls: encoded ACLs.
	ACLs [][]byte `json:"acls,omitempty"`
	// txn_state: the term of the leader whose coordinator wrote it (0:
	// any); applied only from an entry of that term (applyTxnTerm).
	Term uint64 `json:"term,omitempty"`
}

// FSM is the metadata group's state machine.
type FSM struct {
	mu      sync.RWMutex
	state   State
	changed chan struct{} // closed and replaced at every change
	nowMs   int64         // the applying command's time, for the offsets store
	db      *pebble.DB    // in memory: the committed offsets
	offs    *offsets.Store
	auth    AuthState             // users and ACLs (auth.go)
	authGen uint64                // counts changes of auth
	groups  map[string]GroupState // consumer groups' membership (groupstate.go)
	txns    map[string][]byte     // transactional ids' states (txn.go)
	// The share groups' configurations (shareconfig.go) and the count of
	// their changes.
	shareCfgs   map[string][]byte
	shareCfgGen atomic.Uint64
}

var _ raft.FSM = (*FSM)(nil)

// NewFSM returns an empty state machine.
func NewFSM() (*FSM, error) {
	f := &FSM{state: State{Nodes: map[string]Node{}, Topics: map[string]Topic{}}, changed: make(chan struct{})}
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: quiet{}})
	if err != nil {
		return nil, fmt.Errorf("meta: offsets store: %w", err)
	}
	f.db = db
	f.offs = offsets.New(db, offsets.Options{Now: func() time.Time { return time.UnixMilli(f.nowMs) }})
	return f, nil
}

// Close releases the offsets store.
func (f *FSM) Close() error { return f.db.Close() }

// State returns a copy of the state.
func (f *FSM) State() State {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.clone()
}

// Placement is one partition's topic config and replica set (a copy),
// without copying the rest of the state as State does: it is asked once
// per produce and fetch, and a State copy costs one allocation per
// partition of every topic. ok is false when the topic or the partition is
// unknown.
func (f *FSM) Placement(topic string, p int32) (c partition.TopicConfig, set []string, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t, ok := f.state.Topics[topic]
	if !ok || p < 0 || p >= int32(len(t.Replicas)) {
		return partition.TopicConfig{}, nil, false
	}
	return t.Config, slices.Clone(t.Replicas[p]), true
}

// HasTopic reports whether the state lists topic.
func (f *FSM) HasTopic(topic string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	_, ok := f.state.Topics[topic]
	return ok
}

// Nodes returns a copy of the members, without the rest of the state.
func (f *FSM) Nodes() map[string]Node {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return maps.Clone(f.state.Nodes)
}

// ClusterID is the cluster's id as the state records it ("": not yet).
func (f *FSM) ClusterID() string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.ClusterID
}

// Node returns the member id, if the state lists it.
func (f *FSM) Node(id string) (Node, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.state.Nodes[id]
	return n, ok
}

// Changed is closed at the next change of the state.
func (f *FSM) Changed() <-chan struct{} {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.changed
}

// Offsets is the committed offsets, for reading: writes go through Raft.
func (f *FSM) Offsets() *offsets.Store { return f.offs }

func (f *FSM) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Apply applies one command. It returns nil or an error (a command the
// leader checked cannot fail here unless the state changed in between).
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	var c Command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		return fmt.Errorf("meta: index %d: bad command: %w", l.Index, err)
	}
	if err := applyTxnTerm(c, l); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	return f.apply(c)
}

func (f *FSM) apply(c Command) error {
	st := &f.state
	switch c.Op {
	case OpAddNode, OpRejoinNode, OpRemoveNode:
		return applyNode(st, c)
	case OpCreateTopic:
		if c.Topic == nil {
			return fmt.Errorf("meta: create topic: no topic")
		}
		if _, ok := st.Topics[c.Topic.Config.Name]; ok {
			return fmt.Errorf("%w: %q", partition.ErrTopicExists, c.Topic.Config.Name)
		}
		st.Topics[c.Topic.Config.Name] = *c.Topic
		// Offsets of an earlier topic of the name do not pass to this one.
		f.nowMs = c.TimeMs
		return f.offs.DeleteTopic(c.Topic.Config.Name)
	case OpAlterTopic:
		t, ok := st.Topics[c.Name]
		if !ok || c.Topic == nil {
			return fmt.Errorf("%w: %q", partition.ErrTopicNotFound, c.Name)
		}
		cfg := c.Topic.Config
		cfg.Name, cfg.Partitions, cfg.Replicas, cfg.CreatedMs = t.Config.Name, t.Config.Partitions, t.Config.Replicas, t.Config.CreatedMs
		t.Config = cfg
		st.Topics[c.Name] = t
	case OpDeleteTopic:
		if _, ok := st.Topics[c.Name]; !ok {
			return fmt.Errorf("%w: %q", partition.ErrTopicNotFound, c.Name)
		}
		if st.Deleted == nil {
			st.Deleted = map[string]int64{}
		}
		st.Deleted[c.Name] = max(st.Deleted[c.Name], st.Topics[c.Name].Config.CreatedMs)
		delete(st.Topics, c.Name)
		return f.offs.DeleteTopic(c.Name)
	case OpSetReplicas:
		t, ok := st.Topics[c.Name]
		if !ok || c.Topic == nil || len(c.Topic.Replicas) != len(t.Replicas) {
			return fmt.Errorf("meta: set replicas of %q: topic missing or placement of the wrong size", c.Name)
		}
		t.Replicas = cloneSets(c.Topic.Replicas)
		st.Topics[c.Name] = t
	case OpAddPartitions:
		return addPartitions(st, c)
	case OpCommitOffsets:
		f.nowMs = c.TimeMs
		return f.offs.Commit(c.Group, c.Offsets)
	case OpDeleteGroup:
		// The group's generation stays recorded (offsets.DeleteGroup
		// leaves it): a group used again continues above it.
		f.nowMs = c.TimeMs
		delete(f.groups, c.Group)
		return f.offs.DeleteGroup(c.Group)
	case OpDeleteOffsets:
		f.nowMs = c.TimeMs
		return f.offs.Delete(c.Group, c.Offsets)
	case OpGroupGeneration:
		return f.offs.RecordGeneration(c.Group, c.Generation)
	case OpGroupState:
		return f.applyGroupState(c)
	case OpTxnState:
		f.applyTxnState(c)
	case OpShareGroupConfig:
		f.applyShareGroupConfig(c)
	case OpSetClusterID:
		return setClusterID(st, c.Name)
	default:
		if f.applyAuth(c) || f.applyQuota(c) {
			return nil
		}
		return fmt.Errorf("meta: unknown command %q", c.Op)
	}
	return nil
}

// applyNode adds a node, updates a member's addresses (rejoin: refused
// for a node removed since) or removes one.
func applyNode(st *State, c Command) error {
	if c.Op == OpRemoveNode {
		delete(st.Nodes, c.Name)
		if st.Removed == nil {
			st.Removed = map[string]bool{}
		}
		st.Removed[c.Name] = true
		return nil
	}
	if c.Node == nil || c.Node.ID == "" {
		return fmt.Errorf("meta: add node: no node")
	}
	if c.Op == OpRejoinNode && st.Removed[c.Node.ID] {
		return fmt.Errorf("%w: %q", ErrNodeRemoved, c.Node.ID)
	}
	delete(st.Removed, c.Node.ID)
	n := *c.Node
	assignKafkaID(st.Nodes, &n)
	st.Nodes[n.ID] = n
	return nil
}

func setClusterID(st *State, id string) error {
	if id == "" || (st.ClusterID != "" && st.ClusterID != id) {
		return fmt.Errorf("%w: %q, not %q", ErrClusterIDSet, st.ClusterID, id)
	}
	st.ClusterID = id
	return nil
}

// addPartitions appends new partitions to a topic's placement.
func addPartitions(st *State, c Command) error {
	t, ok := st.Topics[c.Name]
	if !ok || c.Topic == nil || c.Topic.Config.CreatedMs != t.Config.CreatedMs {
		return fmt.Errorf("%w: %q", partition.ErrTopicNotFound, c.Name)
	}
	add := c.Topic.Config.Partitions - t.Config.Partitions
	if add <= 0 || len(c.Topic.Replicas) != int(add) || len(c.Topic.Initial) != int(add) {
		return fmt.Errorf("meta: add partitions to %q: %d partitions now, asked %d with %d placements",
			c.Name, t.Config.Partitions, c.Topic.Config.Partitions, len(c.Topic.Replicas))
	}
	t.Config.Partitions = c.Topic.Config.Partitions
	t.Replicas = append(cloneSets(t.Replicas), cloneSets(c.Topic.Replicas)...)
	t.Initial = append(cloneSets(t.Initial), cloneSets(c.Topic.Initial)...)
	st.Topics[c.Name] = t
	return nil
}

// snapshot is the JSON of a snapshot.
type snapshot struct {
	Version int                            `json:"version"`
	State   State                          `json:"state"`
	Offsets map[string][]offsets.Committed `json:"offsets"`
	// Auth is the users and ACLs; absent in snapshots of nodes that had
	// none (and of versions before them): none.
	Auth *AuthState `json:"auth,omitempty"`
	// Generations is each group's recorded generation
	// (OpGroupGeneration); absent in snapshots of versions before it.
	Generations map[string]int32 `json:"generations,omitempty"`
	// Groups is each group's recorded membership (OpGroupState); absent
	// in snapshots of versions before it.
	Groups map[string]GroupState `json:"group_states,omitempty"`
	// Txns is each transactional id's recorded state (OpTxnState);
	// absent in snapshots of versions before it.
	Txns map[string][]byte `json:"txn_states,omitempty"`
	// ShareConfigs is each share group's recorded configuration
	// (OpShareGroupConfig); absent in snapshots of versions before it.
	ShareConfigs map[string][]byte `json:"share_group_configs,omitempty"`
}

// Snapshot captures the state.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := snapshot{Version: 1, State: f.state.clone(), Offsets: map[string][]offsets.Committed{}}
	if len(f.auth.Users) > 0 || len(f.auth.ACLs) > 0 || len(f.auth.Quotas) > 0 {
		a := f.auth.clone()
		s.Auth = &a
	}
	gens, err := f.offs.Generations()
	if err != nil {
		return nil, err
	}
	if len(gens) > 0 {
		s.Generations = gens
	}
	if len(f.groups) > 0 {
		s.Groups = maps.Clone(f.groups)
	}
	if len(f.txns) > 0 {
		s.Txns = maps.Clone(f.txns)
	}
	s.ShareConfigs = cloneShareConfigs(f.shareCfgs)
	groups, err := f.offs.Groups()
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		cs, err := f.offs.Fetch(g, "")
		if err != nil {
			return nil, err
		}
		s.Offsets[g] = cs
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return fsmSnapshot(b), nil
}

// Restore replaces the state with a snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var s snapshot
	if err := json.NewDecoder(rc).Decode(&s); err != nil {
		return fmt.Errorf("meta: restore snapshot: %w", err)
	}
	if s.Version != 1 {
		return fmt.Errorf("meta: restore snapshot: version %d, want 1", s.Version)
	}
	if s.State.Nodes == nil {
		s.State.Nodes = map[string]Node{}
	}
	if s.State.Topics == nil {
		s.State.Topics = map[string]Topic{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	groups, err := f.offs.Groups()
	if err != nil {
		return err
	}
	for _, g := range groups {
		if err := f.offs.DeleteGroup(g); err != nil {
			return err
		}
	}
	for g, cs := range s.Offsets {
		// Each commit keeps its time: restore one time at a time.
		for _, c := range cs {
			f.nowMs = c.CommitTime.UnixMilli()
			if err := f.offs.Commit(g, []offsets.Committed{c}); err != nil {
				return err
			}
		}
	}
	if err := f.offs.SetGenerations(s.Generations); err != nil {
		return err
	}
	f.state = s.State
	f.groups = s.Groups
	f.txns = s.Txns
	f.shareCfgs = s.ShareConfigs
	f.shareCfgGen.Add(1)
	f.auth = AuthState{}
	if s.Auth != nil {
		f.auth = *s.Auth
		slices.SortFunc(f.auth.ACLs, bytes.Compare)
		f.auth.ACLs = slices.CompactFunc(f.auth.ACLs, bytes.Equal)
	}
	f.authGen++
	return nil
}

type fsmSnapshot []byte

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return fmt.Errorf("meta: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (fsmSnapshot) Release() {}

type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(f string, args ...any) {
	panic(fmt.Sprintf("meta: pebble: "+f, args...))
}

// Supersedes reports whether the state says a local topic's incarnation
// is gone: deleted, or replaced by a newer one. A topic merely missing
// from the state proves nothing: the state may lag (a restarted replica's
// is its snapshot's until its log replays).
func (s State) Supersedes(local partition.TopicConfig) bool {
	if t, ok := s.Topics[local.Name]; ok {
		return t.Config.CreatedMs > local.CreatedMs
	}
	d, ok := s.Deleted[local.Name]
	return ok && d >= local.CreatedMs
}
