package meta

import (
	"bytes"
	"io"
	"testing"

	"github.com/logd/logd/partition"
)

// A snapshot written before topics had a cleanup policy (its topic config
// has no "cleanup" field) restores to policy delete with Kafka's
// defaults; a compacted topic's settings survive alter, snapshot and
// restore.
func TestCleanupPolicyInSnapshots(t *testing.T) {
	old := `{"version":1,"state":{"nodes":{},"topics":{"t":{"config":{"name":"t","partitions":1,"replicas":1,` +
		`"retention_ms":604800000,"retention_bytes":-1,"retention_records":-1,"segment_bytes":134217728,` +
		`"segment_ms":604800000,"created_ms":7},"replicas":[["a"]]}}},"offsets":{}}`
	f := newFSM(t)
	if err := f.Restore(io.NopCloser(bytes.NewReader([]byte(old)))); err != nil {
		t.Fatal(err)
	}
	c := f.State().Topics["t"].Config
	if got := c.Cleanups(); got != partition.DefaultCleanup() || got.Policy != partition.CleanupDelete {
		t.Fatalf("old snapshot's cleanup settings: %+v", got)
	}
	policy, lag := partition.CleanupCompact, int64(0)
	alt := c.Apply(partition.ConfigChange{CleanupPolicy: &policy, DeleteRetentionMs: &lag})
	if err := apply(t, f, 1, Command{Op: OpAlterTopic, Name: "t", Topic: &Topic{Config: alt}}); err != nil {
		t.Fatal(err)
	}
	g := newFSM(t)
	if err := g.Restore(io.NopCloser(&persist(t, f).Buffer)); err != nil {
		t.Fatal(err)
	}
	got := g.State().Topics["t"].Config.Cleanups()
	if !got.Compacted() || got.Deletes() || got.DeleteRetentionMs != 0 || got.MinCleanableDirtyRatio != 0.5 {
		t.Fatalf("restored compacted topic: %+v", got)
	}
}
