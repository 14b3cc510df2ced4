package kafka

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// startNodeIn is startNode on a given data directory (to restart it) and
// auth configuration; gate says whether the listener authenticates.
func startNodeIn(t *testing.T, dir string, ac broker.AuthConfig) (*broker.Broker, string, func()) {
	t.Helper()
	b, err := broker.Open(broker.Config{DataDir: dir, Logger: quietLogger(), Auth: ac})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Listen("127.0.0.1:0", Config{Core: b, Logger: quietLogger(), Gate: b.Gate()})
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	b.Ready(broker.Node{KafkaAddr: s.AdvertisedAddr()})
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		b.Shutdown()
		s.Close()
		if err := b.Close(); err != nil {
			t.Errorf("closing the broker: %v", err)
		}
	}
	t.Cleanup(stop)
	return b, s.AdvertisedAddr(), stop
}

func deleteRecords(t *testing.T, adm *kadm.Client, topic string, part int32, offset int64) kadm.DeleteRecordsResponse {
	t.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: part, At: offset})
	res, err := adm.DeleteRecords(testCtx(t), os)
	if err != nil {
		t.Fatalf("delete records %s/%d to %d: %v", topic, part, offset, err)
	}
	r, ok := res.Lookup(topic, part)
	if !ok {
		t.Fatalf("delete records %s/%d: no answer for the partition", topic, part)
	}
	return r
}

// fetchAt fetches one partition at offset and returns the partition's
// answer.
func fetchAt(t *testing.T, cl *kgo.Client, topic string, part int32, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = part, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch %s/%d at %d: %+v, %v", topic, part, offset, resp, err)
	}
	return resp.Topics[0].Partitions[0]
}

// kadm's DeleteRecords moves a partition's log start: fetches below it are
// OFFSET_OUT_OF_RANGE, ListOffsets' earliest is it, an offset above the
// high watermark is OFFSET_OUT_OF_RANGE, -1 is the high watermark, and the
// start survives a restart.
func TestDeleteRecordsKadm(t *testing.T) {
	dir := t.TempDir()
	b, addr, stop := startNodeIn(t, dir, broker.AuthConfig{})
	ctx := testCtx(t)
	if _, err := b.CreateTopic(ctx, "", topicConfig("dr", 2)); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr, kgo.DefaultProduceTopic("dr"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i)), Partition: 0}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	if r := deleteRecords(t, adm, "dr", 0, 4); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete records to 4: %+v", r)
	}
	if r := deleteRecords(t, adm, "dr", 0, 2); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete records back to 2: %+v, want the start unchanged at 4", r)
	}
	if r := deleteRecords(t, adm, "dr", 0, 11); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete records above the high watermark: %+v, want OFFSET_OUT_OF_RANGE", r)
	}
	if r := deleteRecords(t, adm, "dr", 1, -1); r.Err != nil || r.LowWatermark != 0 {
		t.Fatalf("delete records of an empty partition to its high watermark: %+v", r)
	}
	p := fetchAt(t, cl, "dr", 0, 3)
	if p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the log start: error %d, want OFFSET_OUT_OF_RANGE", p.ErrorCode)
	}
	if p := fetchAt(t, cl, "dr", 0, 4); p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.LogStartOffset != 4 {
		t.Fatalf("fetch at the log start: error %d, %d bytes, log start %d", p.ErrorCode, len(p.RecordBatches), p.LogStartOffset)
	}
	wantStart(t, adm, "dr", 0, 4)
	stop()

	b, addr, _ = startNodeIn(t, dir, broker.AuthConfig{})
	adm = kadm.NewClient(newClient(t, addr))
	wantStart(t, adm, "dr", 0, 4)
	if r := deleteRecords(t, adm, "dr", 0, -1); r.Err != nil || r.LowWatermark != 10 {
		t.Fatalf("delete records to the high watermark after a restart: %+v", r)
	}
	if off, _, err := b.ListOffset(ctx, "", "dr", 0, broker.Earliest); err != nil || off != 10 {
		t.Fatalf("the core's earliest offset: %d, %v", off, err)
	}
}

func wantStart(t *testing.T, adm *kadm.Client, topic string, part int32, want int64) {
	t.Helper()
	start, err := adm.ListStartOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := start.Lookup(topic, part); s.Err != nil || s.Offset != want {
		t.Fatalf("earliest offset of %s/%d: %d (%v), want %d", topic, part, s.Offset, s.Err, want)
	}
}

// DeleteRecords needs delete on the topic: a principal with only read and
// describe is refused with TOPIC_AUTHORIZATION_FAILED and the start does
// not move; one granted delete moves it.
func TestDeleteRecordsAuthorization(t *testing.T) {
	b, addr, _ := startNodeIn(t, t.TempDir(), broker.AuthConfig{
		Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")},
	})
	ctx := testCtx(t)
	for user, pw := range map[string]string{"admin": "admin-pw", "eve": "eve-pw"} {
		if err := b.CreateUser(ctx, "User:admin", user, pw, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.CreateTopic(ctx, "User:admin", topicConfig("dr", 1)); err != nil {
		t.Fatal(err)
	}
	admin := newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "admin", "admin-pw")), kgo.DefaultProduceTopic("dr"))
	for i := range 5 {
		if err := admin.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	grant := func(op auth.Operation) {
		t.Helper()
		err := b.AddACLs(ctx, "User:admin", auth.ACL{Principal: auth.User("eve"), Permission: auth.Allow, Operation: op,
			ResourceType: auth.ResourceTopic, PatternType: auth.PatternLiteral, Name: "dr"})
		if err != nil {
			t.Fatal(err)
		}
	}
	grant(auth.OpRead)
	grant(auth.OpDescribe)
	eve := kadm.NewClient(newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA512, "eve", "eve-pw"))))
	if r := deleteRecords(t, eve, "dr", 0, 3); !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("eve, without delete, deletes records: %+v, want TOPIC_AUTHORIZATION_FAILED", r)
	}
	wantStart(t, kadm.NewClient(admin), "dr", 0, 0)
	grant(auth.OpDelete)
	if r := deleteRecords(t, eve, "dr", 0, 3); r.Err != nil || r.LowWatermark != 3 {
		t.Fatalf("eve, granted delete, deletes records: %+v", r)
	}
}
