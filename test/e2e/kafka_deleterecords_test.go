package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaClusterDeleteRecordsSurvivesKill9: a log start moved with
// kadm's DeleteRecords (inside the partition's only segment) holds on
// every replica: after the partition's leader is killed with SIGKILL,
// and again after the next leader is, the leader of the day reports it as
// the earliest offset and a consumer from the start reads from it.
func TestKafkaClusterDeleteRecordsSurvivesKill9(t *testing.T) {
	logdBinary(t)
	nodes := startKafkaCluster(t)
	cli(t, grpcServers(nodes), "topic", "create", "kdel", "--partitions", "1")
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.kafka)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("kdel"),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "kdel", Partition: 0, At: 12})
	res, err := adm.DeleteRecords(ctx, os)
	if r, _ := res.Lookup("kdel", 0); err != nil || r.Err != nil || r.LowWatermark != 12 {
		t.Fatalf("delete records to 12: %+v, %v", r, err)
	}
	for round := range 2 {
		victim := partitionLeader(ctx, t, adm, nodes, "kdel", 0)
		victim.n.kill()
		t.Logf("round %d: killed %s, the leader of kdel/0", round, victim.id)
		checkEarliest(ctx, t, seeds, 12)
		victim.start(t)
	}
	for _, n := range nodes {
		n.n.stop()
	}
}

// checkEarliest waits for the partition's (new) leader to report want as
// the earliest offset, then reads from the start with a new consumer and
// checks that the first record it gets is at want.
func checkEarliest(ctx context.Context, t *testing.T, seeds []string, want int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("kdel"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		starts, err := adm.ListStartOffsets(ctx, "kdel")
		if s, ok := starts.Lookup("kdel", 0); err == nil && ok && s.Err == nil {
			if s.Offset != want {
				t.Fatalf("earliest offset %d, want %d", s.Offset, want)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no earliest offset: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("nothing consumed")
		}
		if rs := fs.Records(); len(rs) > 0 {
			if rs[0].Offset != want {
				t.Fatalf("a consumer from the start read offset %d first, want %d", rs[0].Offset, want)
			}
			return
		}
	}
}
