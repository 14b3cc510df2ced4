package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// openFree opens the broker of dir with appends refused below minFree.
func openFree(t *testing.T, dir string, minFree int64) *broker.Broker {
	t.Helper()
	b, err := broker.Open(broker.Config{DataDir: dir, Fsync: log.FsyncPolicy{Mode: log.FsyncNever}, MinFreeBytes: minFree})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	b.Ready(broker.Node{APIAddr: "127.0.0.1:1"})
	return b
}

// A node with room makes the space reserve; one that starts below half
// its minimum free space deletes it, refuses appends, topic creations and
// offset commits with ErrDiskFull, and still serves reads, retention
// changes and topic deletions.
func TestDiskGuard(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b := openFree(t, dir, 2<<20)
	createTopic(t, b, "t", 1)
	createTopic(t, b, "u", 1)
	produceTo(t, b, "t", 0, "a", "b")
	reserve := filepath.Join(dir, "space-reserve")
	waitFor(t, "the space reserve is made", func() bool {
		st, err := os.Stat(reserve)
		return err == nil && st.Size() == 1<<20
	})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// No file system has 2 EiB free.
	b = openFree(t, dir, 1<<61)
	if _, err := os.Stat(reserve); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the reserve on a full disk: %v, want it deleted at start", err)
	}
	_, err := b.Produce(ctx, broker.ProduceRequest{Topic: "t", Batch: records("c")})
	if !errors.Is(err, broker.ErrDiskFull) {
		t.Fatalf("produce on a full disk: %v, want ErrDiskFull", err)
	}
	if _, err := b.CreateTopic(ctx, "", partition.DefaultConfig("v")); !errors.Is(err, broker.ErrDiskFull) {
		t.Fatalf("create a topic on a full disk: %v, want ErrDiskFull", err)
	}
	if err := b.CommitOffsets(ctx, "", "g", "", -1, []offsets.Committed{{Topic: "t", Offset: 1}}); !errors.Is(err, broker.ErrDiskFull) {
		t.Fatalf("commit on a full disk: %v, want ErrDiskFull", err)
	}
	got := fetch(t, b, broker.FetchRequest{Partitions: []broker.FetchPartition{{Topic: "t"}}})
	if got[0].Err != nil || got[0].Records != 2 {
		t.Fatalf("read on a full disk: %+v, want the 2 records", got[0])
	}
	ms := int64(1000)
	if _, err := b.AlterTopic(ctx, "", "t", partition.ConfigChange{RetentionMs: &ms}); err != nil {
		t.Fatalf("lower retention on a full disk: %v", err)
	}
	if err := b.DeleteTopic(ctx, "", "u"); err != nil {
		t.Fatalf("delete a topic on a full disk: %v", err)
	}
	if pos, err := b.ListOffsets(ctx, "", "t", nil, broker.Latest); err != nil || pos[0].Offset != 2 {
		t.Fatalf("the refused produce left %+v (%v), want the high watermark at 2", pos, err)
	}
}
