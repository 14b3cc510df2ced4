package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// These tests run the Kafka clients users have (kcat and
// confluent-kafka-python, both librdkafka) as processes against a node.
// `make tools` installs them (Debian packages kcat, python3-confluent-kafka).

func run(t *testing.T, ctx context.Context, stdin string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out.String())
	return out.String()
}

func needCommand(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed: run `make tools` (Debian package %s)", name, pkg)
	}
}

func TestKcat(t *testing.T) {
	needCommand(t, "kcat", "kcat")
	n := startNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n.createTopic(t, "kc", 3)
	addr := n.addr

	meta := run(t, ctx, "", "kcat", "-b", addr, "-L", "-t", "kc")
	for _, want := range []string{"1 brokers:", `topic "kc" with 3 partitions:`, "partition 2, leader "} {
		if !strings.Contains(meta, want) {
			t.Errorf("kcat -L lacks %q", want)
		}
	}

	var in strings.Builder
	var want []string
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&in, "key%d:value%d\n", i%5, i)
		want = append(want, fmt.Sprintf("key%d=value%d", i%5, i))
	}
	run(t, ctx, in.String(), "kcat", "-b", addr, "-P", "-t", "kc", "-K:")

	out := run(t, ctx, "", "kcat", "-b", addr, "-C", "-t", "kc", "-o", "beginning", "-e", "-f", "%k=%s\n")
	got := strings.Fields(out)
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("kcat consumed %v, want %v", got, want)
	}

	// A group consumer: reads everything and commits where it stopped.
	out = run(t, ctx, "", "kcat", "-b", addr, "-G", "kcg", "kc", "-o", "beginning", "-e", "-f", "%k=%s\n",
		"-X", "auto.offset.reset=earliest")
	if got := len(strings.Fields(out)); got != 30 {
		t.Fatalf("kcat -G consumed %d records, want 30", got)
	}
	cs, err := n.core.FetchOffsets(ctx, "", "kcg", nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := int64(0)
	for _, c := range cs {
		sum += c.Offset
	}
	if sum != 30 {
		t.Fatalf("kcat's group committed %v (sum %d), want a sum of 30", cs, sum)
	}
}

const pythonClient = `
import json, sys
from confluent_kafka import Producer, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource

addr = sys.argv[1]
out = {}
admin = AdminClient({"bootstrap.servers": addr})
for t, f in admin.create_topics([NewTopic("py", num_partitions=2, replication_factor=1)]).items():
    f.result()
md = admin.list_topics(timeout=10)
out["topics"] = sorted(md.topics.keys())
out["partitions"] = len(md.topics["py"].partitions)

p = Producer({"bootstrap.servers": addr, "enable.idempotence": True, "acks": "all"})
delivered = []
for i in range(20):
    p.produce("py", key=b"k%d" % (i % 4), value=b"v%d" % i,
              on_delivery=lambda err, m: delivered.append(None if err else (m.partition(), m.offset())))
p.flush(20)
out["delivered"] = len([d for d in delivered if d is not None])

c = Consumer({"bootstrap.servers": addr, "group.id": "pyg", "auto.offset.reset": "earliest",
              "enable.auto.commit": False})
c.subscribe(["py"])
values = []
while len(values) < 20:
    m = c.poll(10)
    if m is None:
        break
    if m.error():
        raise SystemExit("consume error: %s" % m.error())
    values.append(m.value().decode())
c.commit(asynchronous=False)
out["consumed"] = sorted(values)
out["committed"] = sum(max(tp.offset, 0) for tp in c.committed([TopicPartition("py", 0), TopicPartition("py", 1)], timeout=10))
c.close()

res = ConfigResource("topic", "py", set_config={"retention.ms": "60000", "retention.records": "500"})
for r, f in admin.alter_configs([res]).items():
    f.result()
for r, f in admin.describe_configs([ConfigResource("topic", "py")]).items():
    out["configs"] = {k: v.value for k, v in f.result().items()}

for t, f in admin.delete_topics(["py"]).items():
    f.result()
out["after_delete"] = sorted(admin.list_topics(timeout=10).topics.keys())
print(json.dumps(out))
`

func TestConfluentKafkaPython(t *testing.T) {
	py := "/usr/bin/python3" // Debian's interpreter, where python3-confluent-kafka installs
	if err := exec.Command(py, "-c", "import confluent_kafka").Run(); err != nil {
		t.Fatalf("confluent_kafka is not importable by %s: run `make tools` (Debian package python3-confluent-kafka): %v", py, err)
	}
	n := startNode(t)
	n.createTopic(t, "other", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out := run(t, ctx, "", py, "-c", pythonClient, n.addr)
	var res struct {
		Topics      []string          `json:"topics"`
		Partitions  int               `json:"partitions"`
		Delivered   int               `json:"delivered"`
		Consumed    []string          `json:"consumed"`
		Committed   int64             `json:"committed"`
		AfterDelete []string          `json:"after_delete"`
		Configs     map[string]string `json:"configs"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("python printed %q: %v", out, err)
	}
	// __consumer_offsets: listed as Kafka lists it (internal_topic_test.go).
	if strings.Join(res.Topics, ",") != "__consumer_offsets,other,py" || res.Partitions != 2 {
		t.Errorf("topics %v, py has %d partitions", res.Topics, res.Partitions)
	}
	if res.Delivered != 20 || len(res.Consumed) != 20 || res.Committed != 20 {
		t.Errorf("delivered %d, consumed %d, committed %d; want 20 each", res.Delivered, len(res.Consumed), res.Committed)
	}
	if c := res.Configs; c["retention.ms"] != "60000" || c["retention.records"] != "500" || c["segment.bytes"] == "" {
		t.Errorf("configs after AlterConfigs: %v", c)
	}
	if strings.Join(res.AfterDelete, ",") != "__consumer_offsets,other" {
		t.Errorf("topics after delete: %v", res.AfterDelete)
	}
}

const kafkajsClient = `
const { Kafka, logLevel } = require("kafkajs");
const kafka = new Kafka({ clientId: "logd-test", brokers: [process.argv[process.argv.length - 1]], logLevel: logLevel.ERROR });
(async () => {
  const out = {};
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const sent = await producer.send({ topic: "js", acks: -1,
    messages: Array.from({ length: 15 }, (_, i) => ({ key: "k" + (i % 3), value: "v" + i })) });
  out.sent = sent.length;
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: "jsg" });
  await consumer.connect();
  await consumer.subscribe({ topic: "js", fromBeginning: true });
  const values = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("consumed only " + values.length)), 30000);
    consumer.run({ eachMessage: async ({ message }) => {
      values.push(message.value.toString());
      if (values.length === 15) { clearTimeout(timer); resolve(); }
    } }).catch(reject);
  });
  await consumer.disconnect();
  out.consumed = values.sort();
  const admin = kafka.admin();
  await admin.connect();
  const offs = await admin.fetchOffsets({ groupId: "jsg", topics: ["js"] });
  out.committed = offs[0].partitions.reduce((s, p) => s + Math.max(Number(p.offset), 0), 0);
  await admin.disconnect();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`

func TestKafkaJS(t *testing.T) {
	needCommand(t, "node", "nodejs")
	modules, err := filepath.Abs("../.tools/kafkajs/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "kafkajs")); err != nil {
		t.Fatalf("kafkajs is not installed in %s: run `make tools`", modules)
	}
	n := startNode(t)
	n.createTopic(t, "js", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "-e", kafkajsClient, n.addr)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafkajs: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	t.Logf("kafkajs printed: %s", out.String())
	var res struct {
		Sent      int      `json:"sent"`
		Consumed  []string `json:"consumed"`
		Committed int64    `json:"committed"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("kafkajs printed %q: %v", out.String(), err)
	}
	if len(res.Consumed) != 15 || res.Sent == 0 {
		t.Fatalf("kafkajs sent to %d partitions, consumed %d records, want 15", res.Sent, len(res.Consumed))
	}
	// kafkajs commits on its own schedule; what it committed must not be
	// past what exists.
	if res.Committed > 15 {
		t.Fatalf("kafkajs committed %d offsets in total, more than the 15 records", res.Committed)
	}
}
