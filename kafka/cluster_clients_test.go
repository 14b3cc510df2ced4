package kafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/kafka"
)

const kafkajsAdmin = `
const { Kafka, logLevel } = require("kafkajs");
const brokers = process.argv[process.argv.length - 1].split(",");
const kafka = new Kafka({ clientId: "logd-test", brokers, logLevel: logLevel.NOTHING, retry: { retries: 3 } });
(async () => {
  const admin = kafka.admin();
  await admin.connect();
  const { groups } = await admin.listGroups();
  const md = await admin.fetchTopicMetadata();
  await admin.disconnect();
  console.log(JSON.stringify({ groups: groups.map((g) => g.groupId).sort(), topics: md.topics.map((t) => t.name).sort() }));
})().catch((e) => { console.error(e); process.exit(1); });
`

// kafkajs's admin.listGroups, which asks every broker and throws on any
// error, lists a group with committed offsets on a 3-node cluster, and its
// fetchTopicMetadata of all topics takes __consumer_offsets without
// partitions.
func TestKafkaJSClusterAdmin(t *testing.T) {
	kafka.NeedCommand(t, "node", "nodejs")
	modules, err := filepath.Abs("../.tools/kafkajs/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "kafkajs")); err != nil {
		t.Fatalf("kafkajs is not installed in %s: run `make tools`", modules)
	}
	addrs := startCluster(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	waitFor(t, "metadata listing 3 brokers and a controller", func() bool {
		md, err := adm.Metadata(ctx)
		return err == nil && len(md.Brokers) == 3 && md.Controller >= 0
	})
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "kjs"); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "kjs", Partition: 0, At: 0, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "kjs-group", offs); err != nil {
		t.Fatal(err)
	}
	jsCtx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(jsCtx, "node", "-e", kafkajsAdmin, strings.Join(seeds, ","))
	cmd.Env = append(cmd.Environ(), "NODE_PATH="+modules)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafkajs: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	var res struct {
		Groups []string `json:"groups"`
		Topics []string `json:"topics"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("kafkajs printed %q: %v", out.String(), err)
	}
	if !slices.Equal(res.Groups, []string{"kjs-group"}) {
		t.Errorf("kafkajs listGroups: %v, want [kjs-group]", res.Groups)
	}
	if !slices.Equal(res.Topics, []string{"__consumer_offsets", "kjs"}) {
		t.Errorf("kafkajs fetchTopicMetadata: %v, want [__consumer_offsets kjs]", res.Topics)
	}
}
