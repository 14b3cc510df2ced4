package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The compacted topic as real Kafka clients see it: franz-go reads a
// tombstone until delete.retention.ms after its segment was cleaned and
// not after; confluent-kafka-python creates a compacted topic and reads
// its cleanup.policy back in DescribeConfigs; kcat consumes a compacted
// partition, gaps and all.

// compactedRecord is a record read back: its offset and value (nil: a
// tombstone).
type compactedRecord struct {
	offset int64
	value  []byte
}

// readCompacted reads partition 0 of topic from its start up to offset
// last with franz-go, and returns every record by key, in offset order.
func readCompacted(t *testing.T, ctx context.Context, addr, topic string, last int64) map[string][]compactedRecord {
	t.Helper()
	cons := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cons.Close()
	got := map[string][]compactedRecord{}
	for off := int64(-1); off < last; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Key)] = append(got[string(r.Key)], compactedRecord{r.Offset, r.Value})
			off = r.Offset
		})
	}
	return got
}

func TestCompactedTombstonesExpireWithFranzGo(t *testing.T) {
	n := startNode(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, n.addr))
	const retention = 500 * time.Millisecond
	res, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"cleanup.policy": kmsg.StringPtr("compact"), "segment.bytes": kmsg.StringPtr("4096"),
		"delete.retention.ms": kmsg.StringPtr(strconv.FormatInt(retention.Milliseconds(), 10)),
	}, "kvt")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	prod := newClient(t, n.addr, kgo.DefaultProduceTopic("kvt"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(key string, value []byte) int64 {
		t.Helper()
		r, err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: value}).First()
		if err != nil {
			t.Fatalf("produce %s: %v", key, err)
		}
		return r.Offset
	}
	produce("deleted", []byte("v0"))
	kept := produce("kept", []byte("v0"))
	tomb := produce("deleted", nil)
	var last int64
	for i := 0; ; i++ {
		last = produce(fmt.Sprintf("filler-%d", i%3), make([]byte, 200))
		active, err := n.core.ActiveSegmentBaseForTest("kvt", 0)
		if err != nil {
			t.Fatal(err)
		}
		if active > tomb+10 {
			break
		}
	}
	if _, err := n.core.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	got := readCompacted(t, ctx, n.addr, "kvt", last)
	if d := got["deleted"]; len(d) != 1 || d[0].offset != tomb || d[0].value != nil {
		t.Fatalf("after the first clean, key deleted reads %v, want only its tombstone at %d", d, tomb)
	}
	if k := got["kept"]; len(k) != 1 || k[0].offset != kept || string(k[0].value) != "v0" {
		t.Fatalf("key kept reads %v, want v0 at %d", k, kept)
	}
	// The tombstone's horizon is delete.retention.ms after the first
	// clean of its segment; a clean after it removes the tombstone.
	time.Sleep(retention + 100*time.Millisecond)
	if _, err := n.core.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	got = readCompacted(t, ctx, n.addr, "kvt", last)
	if d, ok := got["deleted"]; ok {
		t.Fatalf("past delete.retention.ms, key deleted still reads %v", d)
	}
	if k := got["kept"]; len(k) != 1 || k[0].offset != kept || string(k[0].value) != "v0" {
		t.Fatalf("past delete.retention.ms, key kept reads %v, want v0 at %d", k, kept)
	}
}

const pythonCompacted = `
import json, sys
from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource

admin = AdminClient({"bootstrap.servers": sys.argv[1]})
t = NewTopic("pyc", num_partitions=1, replication_factor=1,
             config={"cleanup.policy": "compact", "min.compaction.lag.ms": "1000"})
for _, f in admin.create_topics([t]).items():
    f.result()
out = {}
for _, f in admin.describe_configs([ConfigResource("topic", "pyc")]).items():
    out = {k: v.value for k, v in f.result().items()}
print(json.dumps(out))
`

func TestConfluentKafkaPythonCompacted(t *testing.T) {
	py := "/usr/bin/python3" // Debian's interpreter, where python3-confluent-kafka installs
	if err := exec.Command(py, "-c", "import confluent_kafka").Run(); err != nil {
		t.Fatalf("confluent_kafka is not importable by %s: run `make tools` (Debian package python3-confluent-kafka): %v", py, err)
	}
	n := startNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var configs map[string]string
	out := run(t, ctx, "", py, "-c", pythonCompacted, n.addr)
	if err := json.Unmarshal([]byte(out), &configs); err != nil {
		t.Fatalf("python printed %q: %v", out, err)
	}
	if configs["cleanup.policy"] != "compact" || configs["min.compaction.lag.ms"] != "1000" || configs["delete.retention.ms"] == "" {
		t.Errorf("DescribeConfigs of a compacted topic: %v", configs)
	}
}

func TestKcatCompacted(t *testing.T) {
	needCommand(t, "kcat", "kcat")
	n := startNode(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, n.addr))
	res, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"cleanup.policy": kmsg.StringPtr("compact"), "segment.bytes": kmsg.StringPtr("4096"),
	}, "kcc")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	prod := newClient(t, n.addr, kgo.DefaultProduceTopic("kcc"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const total, keys = 300, 5
	latest := map[string]string{}
	for i := range total {
		k, v := fmt.Sprintf("key%d", i%keys), fmt.Sprintf("value%d", i)
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		latest[k] = v
	}
	if _, err := n.core.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	active, err := n.core.ActiveSegmentBaseForTest("kcc", 0)
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, ctx, "", "kcat", "-b", n.addr, "-C", "-t", "kcc", "-o", "beginning", "-e", "-f", "%o %k=%s\n")
	got, below := map[string]string{}, map[string]int{}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, line := range lines {
		var off int64
		var kv string
		if _, err := fmt.Sscanf(line, "%d %s", &off, &kv); err != nil {
			t.Fatalf("kcat printed %q: %v", line, err)
		}
		k, v, _ := strings.Cut(kv, "=")
		if v != fmt.Sprintf("value%d", off) {
			t.Errorf("offset %d holds %q: a record moved", off, v)
		}
		got[k] = v
		if off < active {
			below[k]++
		}
	}
	for k, v := range latest {
		if got[k] != v {
			t.Errorf("key %s: kcat read %q last, want %q", k, got[k], v)
		}
	}
	for k, c := range below {
		if c > 1 {
			t.Errorf("key %s: %d records below the active segment (base %d), want 1", k, c, active)
		}
	}
	if len(lines) >= total || active < keys {
		t.Fatalf("kcat read %d of %d records (active segment at %d): nothing compacted", len(lines), total, active)
	}
}
