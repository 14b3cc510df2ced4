package kafka_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/logd/logd/kafka"
)

// kafkajsCluster drives kafkajs through the steps of
// cluster_clients_rig_test.go; runScript answers MOVE and CHECK.
const kafkajsCluster = `
const { Kafka, logLevel, ConfigResourceTypes } = require("kafkajs");
const [seeds, topic, group] = process.argv.slice(-3);
const kafka = new Kafka({ clientId: "logd-test", brokers: seeds.split(","), logLevel: logLevel.NOTHING,
  retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2000 } });
const lines = require("readline").createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function ask(what) { console.log(what); await lines.next(); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function produce(producer, prefix, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const key = prefix + "-k" + i, value = prefix + "-v" + i;
    const [md] = await producer.send({ topic, acks: -1, messages: [{ key, value }] });
    out.push({ key, value, partition: md.partition, offset: Number(md.baseOffset) });
  }
  return out;
}

function member(got, assigned) {
  const c = kafka.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 500 });
  c.on(c.events.GROUP_JOIN, (e) => { assigned.set(c, (e.payload.memberAssignment[topic] || []).length); });
  return { c, start: async () => {
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    await c.run({ autoCommit: false, eachMessage: async ({ partition, message }) => {
      // Commit before counting the record: a record whose commit failed
      // is read again, which the test sees.
      await c.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
      got.push({ key: message.key.toString(), value: message.value.toString(), partition, offset: Number(message.offset) });
    } });
  } };
}

async function consumed(got, n, extra) {
  for (let i = 0; i < 600 && got.length < n; i++) await sleep(100);
  await sleep(extra);
  return got.splice(0);
}

(async () => {
  const out = { produced: [], consumed: [] };
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 3 }], waitForLeaders: true, timeout: 30000 });
  const md = await admin.fetchTopicMetadata({ topics: [topic] });
  out.partitions = md.topics[0].partitions.length;
  out.replicas = md.topics[0].partitions.map((p) => p.replicas.length).sort();
  out.brokers = (await admin.describeCluster()).brokers.length;
  const cfg = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }], includeSynonyms: false });
  out.configs = {};
  for (const e of cfg.resources[0].configEntries) {
    if (e.configName === "retention.ms" || e.configName === "cleanup.policy") out.configs[e.configName] = e.configValue;
  }

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const got = [], assigned = new Map();
  const a = member(got, assigned), b = member(got, assigned);
  await a.start();
  await b.start();
  for (let i = 0; i < 300; i++) {
    const na = assigned.get(a.c) || 0, nb = assigned.get(b.c) || 0;
    if (na > 0 && nb > 0 && na + nb === 3) break;
    await sleep(100);
  }
  out.produced.push(await produce(producer, "a", 30));
  out.consumed.push(await consumed(got, 30, 1000));
  await a.c.disconnect();
  await b.c.disconnect();

  out.produced.push(await produce(producer, "b", 12));
  const c = member(got, assigned);
  await c.start();
  out.consumed.push(await consumed(got, 12, 0));
  await ask("MOVE");
  out.produced.push(await produce(producer, "c", 12));
  out.consumed.push(await consumed(got, 12, 1000));
  await ask("CHECK");

  out.groups = (await admin.listGroups()).groups.map((g) => g.groupId).sort();
  const d = (await admin.describeGroups([group])).groups[0];
  out.state = d.state;
  out.members = d.members.length;
  await c.c.disconnect();
  await producer.disconnect();
  await admin.deleteGroups([group]);
  out.groupsAfterDelete = (await admin.listGroups()).groups.map((g) => g.groupId);
  await admin.deleteTopics({ topics: [topic], timeout: 30000 });
  out.deleted = true;
  await admin.disconnect();
  console.log("RESULT " + JSON.stringify(out));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
`

// kafkajs 2.2.4 (idempotent producer, whose default partitioner is
// murmur2; its consumer group; its admin) on three nodes: see
// cluster_clients_rig_test.go. kafkajs's admin has no OffsetDelete; it
// deletes the group.
func TestKafkaJSCluster(t *testing.T) {
	kafka.NeedCommand(t, "node", "nodejs")
	modules, err := filepath.Abs("../.tools/kafkajs/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "kafkajs")); err != nil {
		t.Fatalf("kafkajs is not installed in %s: run `make tools`", modules)
	}
	r := newClientRig(t)
	const topic, group = "js3", "js3-group"
	out := r.runScript([]string{"NODE_PATH=" + modules}, func() { r.checkCommittedAtEnd(group, topic) },
		"node", "-e", kafkajsCluster, joinSeeds(r.seeds), topic, group)
	if res := r.checkScript(out, group); res.GroupsAfterDelete == nil || slices.Contains(res.GroupsAfterDelete, group) {
		t.Errorf("kafkajs listGroups after deleteGroups: %v", res.GroupsAfterDelete)
	}
}
