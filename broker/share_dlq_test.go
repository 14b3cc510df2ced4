package broker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
)

// dlqRecords reads every record of a topic's partition 0.
func dlqRecords(t *testing.T, b *broker.Broker, topic string) []batch.Record {
	t.Helper()
	fp := fetch(t, b, broker.FetchRequest{Decode: true, Partitions: []broker.FetchPartition{{Topic: topic}}})
	if len(fp) != 1 || fp[0].Err != nil {
		t.Fatalf("fetch %s: %+v", topic, fp)
	}
	var out []batch.Record
	err := batch.Split(fp[0].Batches, func(one []byte, _ batch.Info) error {
		_, recs, err := batch.Decode(one, 0)
		for _, r := range recs {
			r.Value = append([]byte(nil), r.Value...)
			out = append(out, r)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func headers(r batch.Record) map[string]string {
	m := map[string]string{}
	for _, h := range r.Headers {
		m[h.Key] = string(h.Value)
	}
	return m
}

// A rejected record (with the member's reason) and one released at the
// delivery limit are appended once each to q.dlq, created on first use,
// with the headers of their origin; they are never delivered again and the
// window moves past them.
func TestShareDeadLetterTopic(t *testing.T) {
	b := shareBroker(t)
	ctx := context.Background()
	if err := b.SetShareGroupConfig(ctx, "", "g", map[string]string{"share.delivery.attempt.limit": "2"}); err != nil {
		t.Fatal(err)
	}
	shareFetch(t, b, "m", 0) // 0..2 ("a", "b", "c")
	res, err := b.ShareFetch(ctx, broker.ShareFetchRequest{Group: "g", Member: "m", SessionEpoch: 1, MaxRecords: 10,
		Partitions: []broker.ShareFetchPartition{{SharePartition: broker.SharePartition{Topic: "q"},
			Acks:    []broker.ShareAck{{First: 0, Last: 2, Types: []broker.ShareAckType{3, 2, 1}}},
			Reasons: map[int64]string{0: "no such customer"}}}})
	if err != nil || res.Partitions[0].AckCode != broker.ShareOK {
		t.Fatalf("acknowledge: %+v %v", res, err)
	}
	if got := acquired(res); len(got) != 1 || got[0] != (broker.ShareRange{First: 1, Last: 1, DeliveryCount: 2}) {
		t.Fatalf("redelivery of 1: %+v", got)
	}
	res = shareFetch(t, b, "m", 2, broker.ShareAck{First: 1, Last: 1, Types: []broker.ShareAckType{2}}) // at the limit
	if got := acquired(res); len(got) != 0 {
		t.Fatalf("acquired %+v after the limit", got)
	}
	recs := dlqRecords(t, b, "q.dlq")
	if len(recs) != 2 {
		t.Fatalf("q.dlq holds %d records, want 2: %+v", len(recs), recs)
	}
	want := []map[string]string{
		{broker.DLQHeaderTopic: "q", broker.DLQHeaderPartition: "0", broker.DLQHeaderOffset: "0", broker.DLQHeaderGroup: "g",
			broker.DLQHeaderCount: "1", broker.DLQHeaderError: "no such customer"},
		{broker.DLQHeaderTopic: "q", broker.DLQHeaderPartition: "0", broker.DLQHeaderOffset: "1", broker.DLQHeaderGroup: "g",
			broker.DLQHeaderCount: "2"},
	}
	for i, r := range recs {
		h := headers(r)
		if h[broker.DLQHeaderTimestamp] == "" {
			t.Errorf("dead letter %d has no source timestamp: %v", i, h)
		}
		delete(h, broker.DLQHeaderTimestamp)
		if len(h) != len(want[i]) {
			t.Errorf("dead letter %d headers %v, want %v", i, h, want[i])
		}
		for k, v := range want[i] {
			if h[k] != v {
				t.Errorf("dead letter %d header %s = %q, want %q", i, k, h[k], v)
			}
		}
		if wantV := []string{"a", "b"}[i]; string(r.Value) != wantV {
			t.Errorf("dead letter %d value %q, want %q", i, r.Value, wantV)
		}
	}
	d, err := b.DescribeShareGroup(ctx, "", "g")
	if err != nil || len(d.Partitions) != 1 || d.Partitions[0].Start != 3 {
		t.Fatalf("describe: %+v %v; want the window past 0..2", d, err)
	}
	// More fetches append nothing again.
	shareFetch(t, b, "m", 3)
	if n := len(dlqRecords(t, b, "q.dlq")); n != 2 {
		t.Fatalf("q.dlq holds %d records after another fetch", n)
	}
}

// share.dlq.enable=false archives as without a dead-letter topic;
// share.dlq.topic names another.
func TestShareDeadLetterConfigs(t *testing.T) {
	b := shareBroker(t)
	ctx := context.Background()
	if err := b.SetShareGroupConfig(ctx, "", "g", map[string]string{"share.dlq.enable": "false"}); err != nil {
		t.Fatal(err)
	}
	shareFetch(t, b, "m", 0)
	shareFetch(t, b, "m", 1, broker.ShareAck{First: 0, Last: 0, Types: []broker.ShareAckType{3}})
	if _, ok := b.TopicIDOf("q.dlq"); ok {
		t.Fatal("q.dlq created with share.dlq.enable=false")
	}
	if err := b.SetShareGroupConfig(ctx, "", "g", map[string]string{"share.dlq.enable": "true", "share.dlq.topic": "poison"}); err != nil {
		t.Fatal(err)
	}
	shareFetch(t, b, "m", 2, broker.ShareAck{First: 1, Last: 1, Types: []broker.ShareAckType{3}})
	if recs := dlqRecords(t, b, "poison"); len(recs) != 1 || headers(recs[0])[broker.DLQHeaderOffset] != "1" {
		t.Fatalf("poison: %+v", recs)
	}
	for k, v := range map[string]string{"share.dlq.enable": "maybe", "share.dlq.topic": "bad/name"} {
		if err := b.SetShareGroupConfig(ctx, "", "g", map[string]string{k: v}); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
}

// A share partition started again at another offset goes on with its
// dead-letter sequence: a record dead-lettered after the reset is
// appended, not taken for a retry of the one before it.
func TestShareDeadLetterAfterOffsetReset(t *testing.T) {
	b := shareBroker(t)
	ctx := context.Background()
	shareFetch(t, b, "m", 0)
	shareFetch(t, b, "m", 1, broker.ShareAck{First: 0, Last: 2, Types: []broker.ShareAckType{3, 1, 1}})
	if _, err := b.ShareHeartbeat(ctx, broker.ShareHeartbeatRequest{Group: "g", Member: "m", MemberEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	res, err := b.AlterShareGroupOffsets(ctx, "", "g", []broker.ShareOffset{{SharePartition: broker.SharePartition{Topic: "q"}, Start: 0}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("alter offsets: %+v %v", res, err)
	}
	shareFetch(t, b, "m", 0)
	shareFetch(t, b, "m", 1, broker.ShareAck{First: 0, Last: 2, Types: []broker.ShareAckType{1, 3, 1}})
	recs := dlqRecords(t, b, "q.dlq")
	if len(recs) != 2 || headers(recs[0])[broker.DLQHeaderOffset] != "0" || headers(recs[1])[broker.DLQHeaderOffset] != "1" {
		t.Fatalf("q.dlq after the reset: %d records %+v, want offsets 0 then 1", len(recs), recs)
	}
}

// A topic whose name is as long as a name may be has no TOPIC.dlq: its
// dead letters are archived instead of holding the window forever.
func TestShareDeadLetterNoNameArchives(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	long := strings.Repeat("t", 249)
	createTopic(t, b, long, 1)
	produceTo(t, b, long, 0, "a", "b")
	if err := b.SetShareGroupConfig(ctx, "", "g", map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		t.Fatal(err)
	}
	fetchLong := func(epoch int32, acks ...broker.ShareAck) {
		t.Helper()
		if _, err := b.ShareFetch(ctx, broker.ShareFetchRequest{Group: "g", Member: "m", SessionEpoch: epoch, MaxRecords: 10,
			Partitions: []broker.ShareFetchPartition{{SharePartition: broker.SharePartition{Topic: long}, Acks: acks}}}); err != nil {
			t.Fatal(err)
		}
	}
	fetchLong(0)
	fetchLong(1, broker.ShareAck{First: 0, Last: 1, Types: []broker.ShareAckType{3}})
	d, err := b.DescribeShareGroup(ctx, "", "g")
	if err != nil || len(d.Partitions) != 1 || d.Partitions[0].Start != 2 {
		t.Fatalf("describe: %+v %v; want the window past the rejected records", d, err)
	}
}
