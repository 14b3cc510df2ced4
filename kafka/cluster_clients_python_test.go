package kafka_test

import (
	"os/exec"
	"testing"
)

// pythonCluster drives confluent-kafka-python (librdkafka) through the
// steps of cluster_clients_rig_test.go; runScript answers MOVE and CHECK.
const pythonCluster = `
import json, sys, time
from confluent_kafka import Producer, Consumer, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource

seeds, topic, group = sys.argv[1:4]
out = {}
def say(line):
    print(line, flush=True)

admin = AdminClient({"bootstrap.servers": seeds})
for f in admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)],
                             operation_timeout=30, request_timeout=40).values():
    f.result()
md = admin.list_topics(timeout=10)
t = md.topics[topic]
out["partitions"] = len(t.partitions)
out["replicas"] = sorted(len(p.replicas) for p in t.partitions.values())
out["brokers"] = len(md.brokers)
for f in admin.describe_configs([ConfigResource("topic", topic)]).values():
    out["configs"] = {k: v.value for k, v in f.result().items() if k in ("retention.ms", "cleanup.policy")}

# librdkafka hashes keys with CRC32 unless told murmur2 (Java's and logd's).
prod = Producer({"bootstrap.servers": seeds, "enable.idempotence": True, "acks": "all",
                 "partitioner": "murmur2_random", "linger.ms": 5})
def rec(m):
    return {"key": m.key().decode(), "value": m.value().decode(), "partition": m.partition(), "offset": m.offset()}
def produce(prefix, n):
    recs, errs = [], []
    def cb(err, m):
        if err:
            errs.append(str(err))
        else:
            recs.append(rec(m))
    for i in range(n):
        prod.produce(topic, key=b"%s-k%d" % (prefix.encode(), i), value=b"%s-v%d" % (prefix.encode(), i), on_delivery=cb)
    prod.flush(60)
    if errs or len(recs) != n:
        raise SystemExit("produce: %d delivered, errors %s" % (len(recs), errs))
    return recs

def consumer():
    c = Consumer({"bootstrap.servers": seeds, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 10000, "heartbeat.interval.ms": 500})
    c.subscribe([topic])
    return c

def consume(cs, n, extra=1.0):
    got, deadline, until = [], time.time() + 60, None
    while time.time() < deadline:
        if len(got) >= n:
            until = until or time.time() + extra
            if time.time() > until:
                break
        for c in cs:
            m = c.poll(0.1)
            if m is None:
                continue
            if m.error():
                sys.stderr.write("consume: %s\n" % m.error())
                continue
            for attempt in range(100):
                try:
                    c.commit(message=m, asynchronous=False)
                    break
                except KafkaException as e:
                    sys.stderr.write("commit: %s\n" % e)
                    time.sleep(0.2)
            got.append(rec(m))
    return got

a, b = consumer(), consumer()
deadline = time.time() + 30
while time.time() < deadline:
    for c in (a, b):
        c.poll(0.1)
    na, nb = len(a.assignment()), len(b.assignment())
    if na > 0 and nb > 0 and na + nb == 3:
        break
out["produced"], out["consumed"] = [], []
out["produced"].append(produce("a", 30))
out["consumed"].append(consume([a, b], 30))
a.close()
b.close()

out["produced"].append(produce("b", 12))
c = consumer()
out["consumed"].append(consume([c], 12, extra=0))
say("MOVE")
sys.stdin.readline()
out["produced"].append(produce("c", 12))
out["consumed"].append(consume([c], 12))
say("CHECK")
sys.stdin.readline()

# librdkafka's list_groups asks every broker the client ever knew and
# fails on one that stopped: a new client knows the live ones only, until
# a Metadata answer names the stopped node again (a down node is listed
# while it still leads a partition). So each call is tried on a new
# client until one answers.
def list_groups(**kw):
    for attempt in range(20):
        try:
            return AdminClient({"bootstrap.servers": seeds}).list_groups(timeout=10, **kw)
        except KafkaException as e:
            sys.stderr.write("list_groups: %s\n" % e)
            time.sleep(0.5)
    return AdminClient({"bootstrap.servers": seeds}).list_groups(timeout=10, **kw)
out["groups"] = sorted(g.id for g in list_groups())
g = list_groups(group=group)[0]
admin = AdminClient({"bootstrap.servers": seeds})
out["state"], out["members"] = g.state, len(g.members)
c.close()
for f in admin.delete_topics([topic], operation_timeout=30).values():
    f.result()
out["deleted"] = True
say("RESULT " + json.dumps(out))
`

// confluent-kafka-python 1.7.0 (librdkafka 2.0.2: idempotent producer
// with the murmur2 partitioner, its consumer group, AdminClient) on
// three nodes: see cluster_clients_rig_test.go. Its AdminClient has no
// group or offset deletion.
func TestConfluentKafkaPythonCluster(t *testing.T) {
	py := "/usr/bin/python3" // Debian's interpreter, where python3-confluent-kafka installs
	if err := exec.Command(py, "-c", "import confluent_kafka").Run(); err != nil {
		t.Fatalf("confluent_kafka is not importable by %s: run `make tools` (Debian package python3-confluent-kafka): %v", py, err)
	}
	r := newClientRig(t)
	const topic, group = "py3", "py3-group"
	out := r.runScript(nil, func() { r.checkCommittedAtEnd(group, topic) },
		py, "-c", pythonCluster, joinSeeds(r.seeds), topic, group)
	r.checkScript(out, group)
}
