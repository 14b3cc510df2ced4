package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var kafkaLine = regexp.MustCompile(`Kafka listener serving"? addr=(\S+)`)

// kafkaListener is the address n's log says its Kafka listener serves on.
func kafkaListener(t *testing.T, n *binNode) string {
	t.Helper()
	m := kafkaLine.FindStringSubmatch(n.stderr())
	if m == nil {
		t.Fatalf("no Kafka listener line in the log:\n%s", n.stderr())
	}
	return m[1]
}

// A record a Kafka client produces is read by `logd consume` with the same
// key, value, partition and offset, and the reverse.
func TestServeKafkaListener(t *testing.T) {
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "",
		"--kafka-addr", "127.0.0.1:0")
	kafkaAddr := kafkaListener(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ProducerBatchCompression(kgo.NoCompression()))
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
	cons, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
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

// Records a kgo producer compresses, with its default codec (snappy) and
// with gzip, lz4 and zstd, are read by `logd consume` and by a kgo
// consumer with the same keys, values and offsets.
func TestServeKafkaCompressed(t *testing.T) {
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "",
		"--kafka-addr", "127.0.0.1:0")
	kafkaAddr := kafkaListener(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	codecs := map[string][]kgo.Opt{
		"default": nil,
		"gzip":    {kgo.ProducerBatchCompression(kgo.GzipCompression())},
		"lz4":     {kgo.ProducerBatchCompression(kgo.Lz4Compression())},
		"zstd":    {kgo.ProducerBatchCompression(kgo.ZstdCompression())},
	}
	for name, opts := range codecs {
		topic := "kc-" + name
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(kafkaAddr), kgo.DefaultProduceTopic(topic)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range 10 {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("key-", i)), Value: []byte(strings.Repeat(name+" ", 10+i))})
		}
		err = cl.ProduceSync(ctx, recs...).FirstErr()
		cl.Close()
		if err != nil {
			t.Fatalf("%s: produce: %v", name, err)
		}
		out := runBin(t, nil, "", "consume", topic, "--server", n.addr, "--json")
		lines := strings.Split(strings.TrimSpace(out.stdout), "\n")
		if out.code != 0 || len(lines) != len(recs) {
			t.Fatalf("%s: logd consume exit %d printed %d lines, want %d:\n%s%s", name, out.code, len(lines), len(recs), out.stdout, out.stderr)
		}
		for i, line := range lines {
			var rec struct {
				Offset int64  `json:"offset"`
				Key    string `json:"key"`
				Value  string `json:"value"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%s: logd consume printed %q: %v", name, line, err)
			}
			if rec.Offset != recs[i].Offset || rec.Key != string(recs[i].Key) || rec.Value != string(recs[i].Value) {
				t.Fatalf("%s: logd consume read %+v, kgo wrote %q=%q at %d", name, rec, recs[i].Key, recs[i].Value, recs[i].Offset)
			}
		}
		cons, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		var got []*kgo.Record
		for len(got) < len(recs) && ctx.Err() == nil {
			got = append(got, cons.PollFetches(ctx).Records()...)
		}
		cons.Close()
		for i := range recs {
			if i >= len(got) || got[i].Offset != recs[i].Offset || string(got[i].Value) != string(recs[i].Value) {
				t.Fatalf("%s: kgo consumer read %d records, want %d", name, len(got), len(recs))
			}
		}
	}
}

func TestServeKafkaAddrChecked(t *testing.T) {
	res := runBin(t, nil, "", "serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "",
		"--kafka-addr", "localhost")
	if res.code == 0 || !strings.Contains(res.stderr, "--kafka-addr localhost is not HOST:PORT") {
		t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
}
