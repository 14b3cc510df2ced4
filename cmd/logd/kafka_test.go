package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var kafkaLine = regexp.MustCompile(`Kafka listener serving"? addr=(\S+)`)

// A record a Kafka client produces is read by `logd consume` with the same
// key, value, partition and offset, and the reverse.
func TestServeKafkaListener(t *testing.T) {
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "",
		"--kafka-addr", "127.0.0.1:0")
	m := kafkaLine.FindStringSubmatch(n.stderr())
	if m == nil {
		t.Fatalf("no Kafka listener line in the log:\n%s", n.stderr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[1]), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, -1, nil, "kt"); err != nil {
		t.Fatal(err)
	}
	r := &kgo.Record{Topic: "kt", Key: []byte("user-7"), Value: []byte("from kafka")}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	res := runBin(t, nil, "from logd\n", "produce", "kt", "--server", n.addr, "--key", "user-7")
	if res.code != 0 {
		t.Fatalf("logd produce: %s", res.stderr)
	}
	out := runBin(t, nil, "", "consume", "kt", "--server", n.addr, "--json")
	type record struct {
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Key       string `json:"key"`
		Value     string `json:"value"`
	}
	var got []record
	for _, line := range strings.Split(strings.TrimSpace(out.stdout), "\n") {
		var rec record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("logd consume printed %q: %v", out.stdout, err)
		}
		got = append(got, rec)
	}
	if len(got) != 2 || got[0].Key != "user-7" || got[0].Value != "from kafka" || got[0].Partition != r.Partition ||
		got[0].Offset != r.Offset || got[1].Value != "from logd" || got[1].Partition != r.Partition {
		t.Fatalf("logd consume read %+v; kgo wrote partition %d offset %d", got, r.Partition, r.Offset)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(m[1]), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"kt": {r.Partition: kgo.NewOffset().At(1)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	fetches := cons.PollFetches(ctx)
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Key) != "user-7" || string(recs[0].Value) != "from logd" {
		t.Fatalf("kgo read %v (errors %v)", recs, fetches.Errors())
	}
}

func TestServeKafkaAddrChecked(t *testing.T) {
	res := runBin(t, nil, "", "serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "",
		"--kafka-addr", "localhost")
	if res.code == 0 || !strings.Contains(res.stderr, "--kafka-addr localhost is not HOST:PORT") {
		t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
}
