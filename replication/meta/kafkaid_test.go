package meta

import (
	"encoding/json"
	"testing"
)

// Nodes get a stable Kafka id when added: derived from the id, the next
// free one on a collision, kept when the node registers again (new
// addresses), and a node listed before Kafka ids existed reads as 0 and
// is not Registered until it registers again.
func TestKafkaIDs(t *testing.T) {
	f, err := NewFSM()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := apply(t, f, 1, Command{Op: OpAddNode, Node: &Node{ID: "a", APIAddr: "h:1", RaftAddr: "h:2"}}); err != nil {
		t.Fatal(err)
	}
	a := f.State().Nodes["a"]
	if a.KafkaID != KafkaIDOf("a") || a.KafkaID <= 0 {
		t.Fatalf("node a: Kafka id %d, want KafkaIDOf(a) = %d, positive", a.KafkaID, KafkaIDOf("a"))
	}
	// Re-registering with other addresses (and any Kafka id asked) keeps it.
	if err := apply(t, f, 2, Command{Op: OpAddNode, Node: &Node{ID: "a", KafkaID: 7, APIAddr: "h:9", KafkaAddr: "h:10", RaftAddr: "h:2"}}); err != nil {
		t.Fatal(err)
	}
	if got := f.State().Nodes["a"]; got.KafkaID != a.KafkaID || got.KafkaAddr != "h:10" {
		t.Fatalf("node a after re-registering: %+v, want Kafka id %d kept", got, a.KafkaID)
	}
	// A collision: the next free id.
	nodes := map[string]Node{"a": {ID: "a", KafkaID: KafkaIDOf("b")}}
	b := Node{ID: "b"}
	assignKafkaID(nodes, &b)
	if want := KafkaIDOf("b")%0x7fffffff + 1; b.KafkaID != want {
		t.Fatalf("colliding id: got %d, want %d", b.KafkaID, want)
	}
	// Metadata written before Kafka ids: zero, and not registered.
	var old Node
	if err := json.Unmarshal([]byte(`{"id":"c","api_addr":"h:1","raft_addr":"h:2"}`), &old); err != nil {
		t.Fatal(err)
	}
	self := Node{ID: "c", APIAddr: "h:1", RaftAddr: "h:2"}
	if old.KafkaID != 0 || old.Registered(self) {
		t.Fatalf("old node %+v: want Kafka id 0, not registered", old)
	}
	old.KafkaID = 5
	if !old.Registered(self) {
		t.Fatal("a node with its addresses and a Kafka id is registered")
	}
	out, err := json.Marshal(Node{ID: "d", APIAddr: "x", RaftAddr: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"id":"d","api_addr":"x","raft_addr":"y"}` {
		t.Fatalf("a node without the new fields encodes as before: %s", out)
	}
}
