package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

func apply(t *testing.T, f *FSM, index uint64, c Command) error {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	r := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: b})
	if r == nil {
		return nil
	}
	return r.(error)
}

type sink struct{ bytes.Buffer }

func (s *sink) ID() string    { return "test" }
func (s *sink) Cancel() error { return nil }
func (s *sink) Close() error  { return nil }

// newFSM is an empty state machine, closed when the test ends.
func newFSM(t *testing.T) *FSM {
	t.Helper()
	f, err := NewFSM()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// persist is f's snapshot as Raft stores it.
func persist(t *testing.T, f *FSM) *sink {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var s sink
	if err := snap.Persist(&s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestFSMCommandsSnapshotRestore(t *testing.T) {
	f, err := NewFSM()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	changed := f.Changed()
	cfg := partition.DefaultConfig("orders")
	cfg.Partitions, cfg.Replicas, cfg.CreatedMs = 2, 2, 1000
	sets := [][]string{{"a", "b"}, {"b", "a"}}
	steps := []Command{
		{Op: OpAddNode, Node: &Node{ID: "a", APIAddr: "h:1", RaftAddr: "h:2"}},
		{Op: OpAddNode, Node: &Node{ID: "b", APIAddr: "h:3", RaftAddr: "h:4"}},
		{Op: OpCreateTopic, Topic: &Topic{Config: cfg, Replicas: sets, Initial: sets}},
		{Op: OpCommitOffsets, TimeMs: 5000, Group: "g", Offsets: []offsets.Committed{{Topic: "orders", Partition: 1, Offset: 9}}},
	}
	for i, c := range steps {
		if err := apply(t, f, uint64(i+1), c); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	select {
	case <-changed:
	default:
		t.Fatal("Changed not closed by a change")
	}
	// A second create of the name fails; alter keeps identity fields.
	if err := apply(t, f, 5, Command{Op: OpCreateTopic, Topic: &Topic{Config: cfg}}); !errors.Is(err, partition.ErrTopicExists) {
		t.Fatalf("create twice: %v", err)
	}
	alt := cfg
	alt.RetentionMs, alt.Partitions, alt.CreatedMs = 60000, 99, 1
	if err := apply(t, f, 6, Command{Op: OpAlterTopic, Name: "orders", Topic: &Topic{Config: alt}}); err != nil {
		t.Fatal(err)
	}
	got := f.State().Topics["orders"].Config
	if got.RetentionMs != 60000 || got.Partitions != 2 || got.CreatedMs != 1000 {
		t.Fatalf("after alter: %+v", got)
	}
	if c, ok, err := f.Offsets().Get("g", "orders", 1); err != nil || !ok || c.Offset != 9 || c.CommitTime.UnixMilli() != 5000 {
		t.Fatalf("committed: %+v %v %v", c, ok, err)
	}

	s := persist(t, f)
	g := newFSM(t)
	// Whatever g held before is replaced.
	if err := apply(t, g, 1, Command{Op: OpCommitOffsets, TimeMs: 1, Group: "other", Offsets: []offsets.Committed{{Topic: "x", Partition: 0, Offset: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(s)); err != nil {
		t.Fatal(err)
	}
	gs := g.State()
	if len(gs.Nodes) != 2 || gs.Topics["orders"].Config != got || len(gs.Topics["orders"].Initial) != 2 {
		t.Fatalf("restored state: %+v", gs)
	}
	if c, ok, _ := g.Offsets().Get("g", "orders", 1); !ok || c.Offset != 9 || c.CommitTime.UnixMilli() != 5000 {
		t.Fatalf("restored offset: %+v %v", c, ok)
	}
	if groups, _ := g.Offsets().Groups(); len(groups) != 1 {
		t.Fatalf("restored groups: %v", groups)
	}

	// Deleting the topic drops its offsets; removing a node.
	if err := apply(t, f, 7, Command{Op: OpDeleteTopic, Name: "orders"}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := f.Offsets().Get("g", "orders", 1); ok {
		t.Fatal("offsets of a deleted topic kept")
	}
	if err := apply(t, f, 8, Command{Op: OpRemoveNode, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.State().Nodes["a"]; ok {
		t.Fatal("node a still listed")
	}
	if err := apply(t, f, 9, Command{Op: "bogus"}); err == nil {
		t.Fatal("unknown command applied")
	}
}

// A removed node that comes back with its data is refused, also after a
// snapshot; the same id joining anew (no data) is a member again.
func TestRemovedNodeRejoinIsRefused(t *testing.T) {
	f := newFSM(t)
	a := &Node{ID: "a", APIAddr: "h:1", RaftAddr: "h:2"}
	moved := &Node{ID: "a", APIAddr: "h:5", RaftAddr: "h:6"}
	if err := apply(t, f, 1, Command{Op: OpAddNode, Node: a}); err != nil {
		t.Fatal(err)
	}
	if err := apply(t, f, 2, Command{Op: OpRejoinNode, Node: moved}); err != nil {
		t.Fatalf("a member's rejoin: %v", err)
	}
	if n := f.State().Nodes["a"]; n.APIAddr != "h:5" || n.KafkaID == 0 {
		t.Fatalf("after rejoin: %+v", n)
	}
	if err := apply(t, f, 3, Command{Op: OpRemoveNode, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	s := persist(t, f)
	g := newFSM(t)
	if err := g.Restore(io.NopCloser(s)); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*FSM{f, g} {
		if err := apply(t, m, 4, Command{Op: OpRejoinNode, Node: a}); !errors.Is(err, ErrNodeRemoved) {
			t.Fatalf("a removed node's rejoin: %v", err)
		}
		if _, ok := m.State().Nodes["a"]; ok {
			t.Fatal("a removed node listed again")
		}
	}
	if err := apply(t, g, 5, Command{Op: OpAddNode, Node: a}); err != nil {
		t.Fatal(err)
	}
	if err := apply(t, g, 6, Command{Op: OpRejoinNode, Node: a}); err != nil {
		t.Fatalf("rejoin after joining anew: %v", err)
	}
	if _, ok := g.State().Nodes["a"]; !ok || g.State().Removed["a"] {
		t.Fatalf("joined anew: %+v", g.State())
	}
}

func TestGroupOfNamesTheIncarnation(t *testing.T) {
	a := partition.TopicConfig{Name: "t", CreatedMs: 1}
	b := partition.TopicConfig{Name: "t", CreatedMs: 2}
	if GroupOf(a, 0) == GroupOf(b, 0) || GroupOf(a, 0) == GroupOf(a, 1) {
		t.Fatal("group ids collide")
	}
}

func TestSupersedesNeedsEvidence(t *testing.T) {
	old := partition.TopicConfig{Name: "t", CreatedMs: 10}
	s := State{Topics: map[string]Topic{}}
	if s.Supersedes(old) {
		t.Fatal("a topic missing from a (possibly lagging) state was judged deleted")
	}
	s.Topics["t"] = Topic{Config: partition.TopicConfig{Name: "t", CreatedMs: 10}}
	if s.Supersedes(old) {
		t.Fatal("the same incarnation judged superseded")
	}
	s.Topics["t"] = Topic{Config: partition.TopicConfig{Name: "t", CreatedMs: 20}}
	if !s.Supersedes(old) {
		t.Fatal("a newer incarnation does not supersede")
	}
	f, err := NewFSM()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := apply(t, f, 1, Command{Op: OpCreateTopic, Topic: &Topic{Config: old}}); err != nil {
		t.Fatal(err)
	}
	if err := apply(t, f, 2, Command{Op: OpDeleteTopic, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	if !f.State().Supersedes(old) {
		t.Fatal("a deleted topic's incarnation not superseded")
	}
	if f.State().Supersedes(partition.TopicConfig{Name: "t", CreatedMs: 30}) {
		t.Fatal("a later incarnation (the state lags) judged deleted")
	}
}

// delete_group deletes every committed offset of one group, and only its.
func TestFSMDeleteGroup(t *testing.T) {
	f, err := NewFSM()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, g := range []string{"g", "h"} {
		c := Command{Op: OpCommitOffsets, TimeMs: 1, Group: g, Offsets: []offsets.Committed{{Topic: "t", Partition: 0, Offset: 3}, {Topic: "u", Partition: 1, Offset: 4}}}
		if err := apply(t, f, uint64(i+1), c); err != nil {
			t.Fatal(err)
		}
	}
	if err := apply(t, f, 3, Command{Op: OpDeleteGroup, TimeMs: 2, Group: "g"}); err != nil {
		t.Fatal(err)
	}
	if cs, err := f.Offsets().Fetch("g", ""); err != nil || len(cs) != 0 {
		t.Fatalf("offsets of the deleted group: %+v %v", cs, err)
	}
	if cs, err := f.Offsets().Fetch("h", ""); err != nil || len(cs) != 2 {
		t.Fatalf("offsets of the other group: %+v %v", cs, err)
	}
	if err := apply(t, f, 4, Command{Op: OpDeleteGroup, TimeMs: 3, Group: "none"}); err != nil {
		t.Fatalf("deleting a group without offsets: %v", err)
	}
}

// TestPlacementCopiesOnePartition: the per-request lookups (Placement,
// HasTopic, Node, Nodes) answer from the state without copying all of
// it. State copies every partition's replica set, once per produce and
// fetch before, which at 3,000 partitions made a produce to every
// partition quadratic (13% of a node's CPU, and most of its garbage).
func TestPlacementCopiesOnePartition(t *testing.T) {
	f := newFSM(t)
	const n = 3000
	cfg := partition.DefaultConfig("many")
	cfg.Partitions, cfg.Replicas, cfg.CreatedMs = n, 3, 1000
	sets := make([][]string, n)
	for i := range sets {
		sets[i] = []string{"a", "b", "c"}
	}
	sets[7] = []string{"c", "a", "b"}
	steps := []Command{
		{Op: OpAddNode, Node: &Node{ID: "a", APIAddr: "h:1", RaftAddr: "h:2"}},
		{Op: OpCreateTopic, Topic: &Topic{Config: cfg, Replicas: sets, Initial: sets}},
	}
	for i, c := range steps {
		if err := apply(t, f, uint64(i+1), c); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	c, set, ok := f.Placement("many", 7)
	if !ok || c.CreatedMs != 1000 || !slices.Equal(set, []string{"c", "a", "b"}) {
		t.Fatalf("Placement(many, 7) = %+v %v %v", c, set, ok)
	}
	set[0] = "changed"
	if _, again, _ := f.Placement("many", 7); again[0] != "c" {
		t.Fatalf("Placement returned the state's own set: %v", again)
	}
	for _, p := range []int32{-1, n} {
		if _, _, ok := f.Placement("many", p); ok {
			t.Fatalf("Placement(many, %d) found a partition", p)
		}
	}
	if _, _, ok := f.Placement("none", 0); ok || f.HasTopic("none") || !f.HasTopic("many") {
		t.Fatal("an unknown topic was found, or a known one was not")
	}
	if nd, ok := f.Node("a"); !ok || nd.APIAddr != "h:1" {
		t.Fatalf("Node(a) = %+v %v", nd, ok)
	}
	if _, ok := f.Node("z"); ok {
		t.Fatal("Node(z) found")
	}
	// Allocations, not time: a lookup allocates for one set, whatever the
	// number of partitions (State allocates one set per partition).
	if a := testing.AllocsPerRun(100, func() { f.Placement("many", 7) }); a > 2 {
		t.Fatalf("Placement allocates %.0f times at %d partitions", a, n)
	}
	if a := testing.AllocsPerRun(10, func() { f.State() }); a < n {
		t.Fatalf("State allocates %.0f times: the test no longer compares with a full copy", a)
	}
	if a := testing.AllocsPerRun(100, func() { f.Nodes() }); a > 4 {
		t.Fatalf("Nodes allocates %.0f times at %d partitions", a, n)
	}
}

// The cluster id is set once, survives a snapshot, and another id is
// refused.
func TestClusterIDSetOnce(t *testing.T) {
	f := newFSM(t)
	if err := apply(t, f, 1, Command{Op: OpSetClusterID, Name: "c1"}); err != nil || f.ClusterID() != "c1" {
		t.Fatalf("set: %v, id %q", err, f.ClusterID())
	}
	if err := apply(t, f, 2, Command{Op: OpSetClusterID, Name: "c1"}); err != nil {
		t.Fatalf("the same id again: %v", err)
	}
	g := newFSM(t)
	if err := g.Restore(io.NopCloser(persist(t, f))); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*FSM{f, g} {
		if err := apply(t, m, 3, Command{Op: OpSetClusterID, Name: "c2"}); !errors.Is(err, ErrClusterIDSet) {
			t.Fatalf("another id: %v, want ErrClusterIDSet", err)
		}
		if m.ClusterID() != "c1" || m.State().ClusterID != "c1" {
			t.Fatalf("id %q, want c1", m.ClusterID())
		}
	}
}
