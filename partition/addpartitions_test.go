package partition

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// TestAddPartitionsSurvivesRestart: the new partitions take appends at
// once, the old ones keep their records, and the count is the one a
// restart opens.
func TestAddPartitionsSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	tp, db := openTopics(t, dir)
	c := DefaultConfig("orders")
	c.Partitions = 2
	if _, err := tp.Create(c); err != nil {
		t.Fatal(err)
	}
	p0, _ := tp.Partition("orders", 0)
	appendOne(t, p0, batch.NoProducer, 3)
	_, before, _ := tp.Partitions("orders")
	got, err := tp.AddPartitions("orders", 5)
	if err != nil {
		t.Fatal(err)
	}
	if got.Partitions != 5 {
		t.Fatalf("config after add: %+v", got)
	}
	if len(before) != 2 {
		t.Fatalf("a caller's earlier partition list changed under it: %d partitions", len(before))
	}
	p4, err := tp.Partition("orders", 4)
	if err != nil {
		t.Fatal(err)
	}
	if res := appendOne(t, p4, batch.NoProducer, 2); res.BaseOffset != 0 {
		t.Fatalf("first append to a new partition at offset %d, want 0", res.BaseOffset)
	}
	closeTopics(t, tp, db)

	tp, db = openTopics(t, dir)
	defer closeTopics(t, tp, db)
	cfg, parts, err := tp.Partitions("orders")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Partitions != 5 || len(parts) != 5 {
		t.Fatalf("after restart: config %d partitions, %d open; want 5", cfg.Partitions, len(parts))
	}
	if hw := parts[0].Log.HighWatermark(); hw != 3 {
		t.Errorf("partition 0 high watermark %d after restart, want 3", hw)
	}
	if hw := parts[4].Log.HighWatermark(); hw != 2 {
		t.Errorf("partition 4 high watermark %d after restart, want 2", hw)
	}
}

func TestAddPartitionsRefusesBadCounts(t *testing.T) {
	tp, db := openTopics(t, t.TempDir())
	defer closeTopics(t, tp, db)
	c := DefaultConfig("t")
	c.Partitions = 3
	if _, err := tp.Create(c); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int32{-1, 0, 2, 3, MaxPartitions + 1} {
		if _, err := tp.AddPartitions("t", n); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("AddPartitions(t, %d) = %v, want ErrInvalidConfig", n, err)
		}
	}
	if _, err := tp.AddPartitions("t", 2); err == nil || !strings.Contains(err.Error(), "has 3 partitions") {
		t.Errorf("shrinking: error %v should say the current count", err)
	}
	if _, err := tp.AddPartitions("nope", 4); !errors.Is(err, ErrTopicNotFound) {
		t.Errorf("unknown topic: %v, want ErrTopicNotFound", err)
	}
	if cfg, _ := tp.Config("t"); cfg.Partitions != 3 {
		t.Errorf("refused adds changed the count to %d", cfg.Partitions)
	}
}

// TestFailedAddLeavesTopicAsItWas: an add whose new partition fails to
// open keeps the old count and removes the directories it made; one
// crashed add's leftover directory is moved aside by the next add, so the
// new partition starts empty.
func TestFailedAddLeavesTopicAsItWas(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(filepath.Join(dir, "meta"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fail := "t-3"
	tp, err := Open(Options{DataDir: dir, DB: db, LogOptions: func(TopicConfig) log.Options {
		return log.Options{FS: failingOpenFS{fail: fail}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	c := DefaultConfig("t")
	c.Partitions = 2
	if _, err := tp.Create(c); err != nil {
		t.Fatal(err)
	}
	if _, err := tp.AddPartitions("t", 5); err == nil {
		t.Fatal("add succeeded with partition 3 failing to open")
	}
	if cfg, _ := tp.Config("t"); cfg.Partitions != 2 {
		t.Fatalf("count %d after a failed add, want 2", cfg.Partitions)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "partitions"))
	for _, e := range ents {
		if n := e.Name(); n != "t-0" && n != "t-1" {
			t.Errorf("left behind: %s", n)
		}
	}
	// A crashed add's directory, with a record in it.
	fail = "none"
	stray := filepath.Join(dir, "partitions", "t-2")
	if err := os.MkdirAll(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stray, "00000000000000000000.log"), []byte("old bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tp.AddPartitions("t", 3); err != nil {
		t.Fatal(err)
	}
	p2, _ := tp.Partition("t", 2)
	if hw := p2.Log.HighWatermark(); hw != 0 {
		t.Errorf("new partition 2 starts at high watermark %d, want 0 (the stray directory moved aside)", hw)
	}
}
