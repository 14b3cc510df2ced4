package kafka

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/internal/batch"
)

// produceRaw sends one batch to partition 0 of topic with acks and
// returns the partition's answer.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, acks int16, b []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

func valueBatch(size int, tsMs int64) []byte {
	return batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: tsMs, Value: []byte(strings.Repeat("v", size))}})
}

// The produce configs are set at create, described with their sources,
// and honoured: max.message.bytes refuses a larger batch with
// MESSAGE_TOO_LARGE, a LogAppendTime topic stores the broker's time in
// the batch (answered in the produce response, read by consumers as the
// records' timestamps), and compression.type accepts only producer.
func TestTopicProduceConfigs(t *testing.T) {
	n := startNode(t)
	ctx := testCtx(t)
	cl := newClient(t, n.addr)
	adm := kadm.NewClient(cl)
	res, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"max.message.bytes": kmsg.StringPtr("2000"), "message.timestamp.type": kmsg.StringPtr("LogAppendTime"),
		"min.insync.replicas": kmsg.StringPtr("1"), "compression.type": kmsg.StringPtr("producer"),
	}, "lat")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v %s", err, res.Err, res.ErrMessage)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "lat")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := rcs.On("lat", nil)
	want := map[string]string{"max.message.bytes": "2000/DYNAMIC_TOPIC_CONFIG", "message.timestamp.type": "LogAppendTime/DYNAMIC_TOPIC_CONFIG",
		"min.insync.replicas": "1/DEFAULT_CONFIG", "compression.type": "producer/DEFAULT_CONFIG"}
	for _, c := range rc.Configs {
		if w, ok := want[c.Key]; ok {
			if got := c.MaybeValue() + "/" + c.Source.String(); got != w {
				t.Errorf("%s: %s, want %s", c.Key, got, w)
			}
			delete(want, c.Key)
		}
	}
	if len(want) != 0 {
		t.Errorf("not described: %v", want)
	}

	if p := produceRaw(t, cl, "lat", -1, valueBatch(2500, 1)); p.ErrorCode != kerr.MessageTooLarge.Code || !strings.Contains(*p.ErrorMessage, "max.message.bytes") {
		t.Fatalf("batch over max.message.bytes: code %d %v", p.ErrorCode, p.ErrorMessage)
	}
	before := time.Now().UnixMilli()
	p := produceRaw(t, cl, "lat", -1, valueBatch(10, 1))
	if p.ErrorCode != 0 || p.LogAppendTime < before {
		t.Fatalf("LogAppendTime produce: code %d, append time %d (sent at %d)", p.ErrorCode, p.LogAppendTime, before)
	}
	cons := newClient(t, n.addr, kgo.ConsumeTopics("lat"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := cons.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	recs := fs.Records()
	if len(recs) != 1 || recs[0].Timestamp.UnixMilli() != p.LogAppendTime || recs[0].Attrs.TimestampType() != 1 {
		t.Fatalf("consumed %d records; first %+v, want timestamp %d of type LogAppendTime", len(recs), recs[0].Attrs, p.LogAppendTime)
	}

	res, _ = adm.CreateTopic(ctx, 1, 1, map[string]*string{"compression.type": kmsg.StringPtr("zstd")}, "zs")
	if !errors.Is(res.Err, kerr.InvalidConfig) || !strings.Contains(res.ErrMessage, "compression.type=producer") {
		t.Fatalf("compression.type=zstd: %v %s", res.Err, res.ErrMessage)
	}
	res, _ = adm.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": kmsg.StringPtr("Now")}, "ts")
	if !errors.Is(res.Err, kerr.InvalidConfig) {
		t.Fatalf("message.timestamp.type=Now: %v %s", res.Err, res.ErrMessage)
	}
}

// min.insync.replicas above the replicas in sync refuses acks=all with
// NOT_ENOUGH_REPLICAS and nothing stored; acks=1 is still stored. Set by
// alter, and taken back by delete.
func TestMinInsyncReplicasSingleNode(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "isr", 1)
	ctx := testCtx(t)
	cl := newClient(t, n.addr)
	// kgo sends a raw produce with the client's acks.
	leaderAcks := newClient(t, n.addr, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	adm := kadm.NewClient(cl)
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "min.insync.replicas", Value: kmsg.StringPtr("2")}}, "isr")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, rs)
	}
	if p := produceRaw(t, cl, "isr", -1, valueBatch(5, 1)); p.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with 1 of 2 in sync: code %d", p.ErrorCode)
	}
	if p := produceRaw(t, leaderAcks, "isr", 1, valueBatch(5, 1)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("acks=1: code %d at %d, want stored at 0", p.ErrorCode, p.BaseOffset)
	}
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "min.insync.replicas"}}, "isr")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, rs)
	}
	if p := produceRaw(t, cl, "isr", -1, valueBatch(5, 1)); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("acks=all after delete: code %d at %d", p.ErrorCode, p.BaseOffset)
	}
}

// A batch larger than a fetch's partition and request limits is still
// answered whole when it is the first one (KIP-74, as Kafka does), so a
// consumer whose fetch limits are below a topic's max.message.bytes
// makes progress; described without a topic value, max.message.bytes is
// the node's limit.
func TestFetchServesBatchOverFetchLimits(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "big", 1)
	cl := newClient(t, n.addr)
	if p := produceRaw(t, cl, "big", -1, valueBatch(4000, 1)); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	cons := newClient(t, n.addr, kgo.ConsumeTopics("big"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(1000), kgo.FetchMaxPartitionBytes(1000))
	fs := cons.PollFetches(testCtx(t))
	if err := fs.Err(); err != nil || len(fs.Records()) != 1 || len(fs.Records()[0].Value) != 4000 {
		t.Fatalf("fetch below the batch's size: %v, %d records", err, len(fs.Records()))
	}
	vals := topicConfigValues(t, kadm.NewClient(cl), "big")
	if c := vals["max.message.bytes"]; c.MaybeValue() != "1048576" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("max.message.bytes: %s (%s), want the node's 1048576 (DEFAULT_CONFIG)", c.MaybeValue(), c.Source)
	}
}
