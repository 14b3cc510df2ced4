package kafka_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaLog collects what Sarama logs, to fail on the errors it logs
// and recovers from (an ApiVersions version refused, say).
type saramaLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *saramaLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

func (l *saramaLog) errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.Contains(s, "Error while sending ApiVersions") || strings.Contains(s, "Failed to send ApiVersions") {
			out = append(out, s)
		}
	}
	return out
}

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.ClientID = "logd-sarama-test"
	cfg.Metadata.Retry.Max = 50
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	cfg.Admin.Timeout = 30 * time.Second // CreateTopics waits for leaders within it
	cfg.Admin.Retry.Max = 50
	cfg.Admin.Retry.Backoff = 200 * time.Millisecond
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Retry.Max = 50
	cfg.Producer.Retry.Backoff = 200 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewMurmur2Partitioner
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Rebalance.Retry.Max = 50
	cfg.Consumer.Return.Errors = true
	return cfg
}

// saramaHandler commits each record it consumes, then hands it to out.
type saramaHandler struct{ out chan<- clientRecord }

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			s.MarkMessage(m, "")
			s.Commit()
			h.out <- clientRecord{Key: string(m.Key), Value: string(m.Value), Partition: m.Partition, Offset: m.Offset}
		case <-s.Context().Done():
			return nil
		}
	}
}

// saramaMember is a member of a Sarama consumer group that runs until
// stopped.
type saramaMember struct {
	group  sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func startSaramaMember(t *testing.T, seeds []string, group, topic string, out chan<- clientRecord) *saramaMember {
	t.Helper()
	g, err := sarama.NewConsumerGroup(seeds, group, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &saramaMember{group: g, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, saramaHandler{out}); err != nil && ctx.Err() == nil {
				t.Logf("sarama consume: %v", err)
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	go func() {
		for err := range g.Errors() {
			t.Logf("sarama group error: %v", err)
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *saramaMember) stop() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
		m.group.Close()
	})
}

// collect takes n records from in, failing the test if they are slow.
func collect(t *testing.T, what string, in <-chan clientRecord, n int) []clientRecord {
	t.Helper()
	var out []clientRecord
	timeout := time.After(60 * time.Second)
	for len(out) < n {
		select {
		case r := <-in:
			out = append(out, r)
		case <-timeout:
			t.Fatalf("%s: consumed %d of %d records: %v", what, len(out), n, out)
		}
	}
	return out
}

// noMore checks that nothing more arrives on in for a moment.
func noMore(t *testing.T, what string, in <-chan clientRecord) {
	t.Helper()
	select {
	case r := <-in:
		t.Errorf("%s: consumed %+v again", what, r)
	case <-time.After(time.Second):
	}
}

func saramaProduce(t *testing.T, p sarama.SyncProducer, topic, prefix string, n int) []clientRecord {
	t.Helper()
	var out []clientRecord
	for i := range n {
		key, value := fmt.Sprintf("%s-k%d", prefix, i), fmt.Sprintf("%s-v%d", prefix, i)
		part, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(value)})
		if err != nil {
			t.Fatalf("sarama produce %s: %v", value, err)
		}
		out = append(out, clientRecord{Key: key, Value: value, Partition: part, Offset: off})
	}
	return out
}

// Sarama (Version 3.9, idempotent producer, its own consumer group and
// admin) on three nodes: see cluster_clients_rig_test.go.
func TestSaramaCluster(t *testing.T) {
	// Set before any Sarama goroutine starts and never put back: Sarama
	// reads its package logger from goroutines that may outlive the test's
	// cleanups (the race detector saw a restore race with them).
	logs := &saramaLog{}
	sarama.Logger = log.New(logs, "", 0)
	r := newClientRig(t)
	const topic, group = "sar", "sar-group"

	client, err := sarama.NewClient(r.seeds, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	saramaAdminTopic(t, admin, topic)
	r.checkTopic(topic)

	producer, err := sarama.NewSyncProducer(r.seeds, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()

	// Two members share the records, each once.
	recs := make(chan clientRecord, 1000)
	a := startSaramaMember(t, r.seeds, group, topic, recs)
	b := startSaramaMember(t, r.seeds, group, topic, recs)
	r.waitGroupStable(group, 2)
	first := saramaProduce(t, producer, topic, "a", 30)
	r.checkRouting(first, 3)
	r.checkExactlyOnce("two members", first, collect(t, "two members", recs, len(first)))
	noMore(t, "two members", recs)
	a.stop()
	b.stop()
	r.checkCommittedAtEnd(group, topic)

	// A member restarted in the group resumes at the commits.
	second := saramaProduce(t, producer, topic, "b", 12)
	c := startSaramaMember(t, r.seeds, group, topic, recs)
	r.checkExactlyOnce("restarted member", second, collect(t, "restarted member", recs, len(second)))

	// The coordinator stops while the group runs.
	r.moveCoordinator()
	third := saramaProduce(t, producer, topic, "c", 12)
	r.checkExactlyOnce("after the coordinator moved", third, collect(t, "after the coordinator moved", recs, len(third)))
	noMore(t, "after the coordinator moved", recs)
	r.checkCommittedAtEnd(group, topic)

	// Sarama's admin asks each broker it knows for its groups, and
	// forgets a stopped one at its next metadata refresh.
	if err := client.RefreshMetadata(); err != nil {
		t.Fatal(err)
	}
	saramaAdminGroup(t, admin, group, topic, c.stop)
	if err := admin.DeleteTopic(topic); err != nil {
		t.Fatalf("sarama DeleteTopic: %v", err)
	}
	// Every node drops the topic once it applies the delete.
	waitFor(t, "sarama ListTopics without "+topic, func() bool {
		topics, err := admin.ListTopics()
		_, ok := topics[topic]
		return err == nil && !ok
	})
	if errs := logs.errors(); len(errs) > 0 {
		t.Errorf("sarama logged: %v", errs)
	}
}

func saramaAdminTopic(t *testing.T, admin sarama.ClusterAdmin, topic string) {
	t.Helper()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3}, false); err != nil {
		t.Fatalf("sarama CreateTopic: %v", err)
	}
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("sarama ListTopics: %v", err)
	}
	if d := topics[topic]; d.NumPartitions != 3 || d.ReplicationFactor != 3 {
		t.Errorf("sarama ListTopics: %s is %+v", topic, d)
	}
	md, err := admin.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != 3 {
		t.Fatalf("sarama DescribeTopics: %v %+v", err, md)
	}
	for _, p := range md[0].Partitions {
		if len(p.Replicas) != 3 || len(p.Isr) == 0 {
			t.Errorf("sarama DescribeTopics: partition %+v", p)
		}
	}
	res, err := admin.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: topic}},
		sarama.DescribeConfigsOptions{IncludeSynonyms: true, IncludeDocumentation: true})
	if err != nil || len(res) != 1 || res[0].ErrorCode != sarama.ErrNoError {
		t.Fatalf("sarama DescribeConfigs: %v %+v", err, res)
	}
	got := map[string]string{}
	for _, e := range res[0].Configs {
		got[e.Name] = e.Value
	}
	if got["retention.ms"] == "" || got["cleanup.policy"] != "delete" {
		t.Errorf("sarama DescribeConfigs: %v", got)
	}
}

func saramaAdminGroup(t *testing.T, admin sarama.ClusterAdmin, group, topic string, stop func()) {
	t.Helper()
	groups, err := admin.ListConsumerGroups()
	if err != nil || groups[group] != "consumer" {
		t.Fatalf("sarama ListConsumerGroups: %v %v", err, groups)
	}
	ds, err := admin.DescribeConsumerGroups([]string{group})
	if err != nil || len(ds) != 1 || ds[0].Err != sarama.ErrNoError || ds[0].State != "Stable" || len(ds[0].Members) != 1 {
		t.Fatalf("sarama DescribeConsumerGroups: %v %+v", err, ds)
	}
	if err := admin.DeleteConsumerGroupOffset(group, topic, 0); err == nil {
		t.Error("sarama DeleteConsumerGroupOffset of a partition the running group reads: accepted")
	}
	// Once the member leaves, the group is empty: its offsets and then
	// the group itself can go.
	stop()
	if err := admin.DeleteConsumerGroupOffset(group, topic, 0); err != nil {
		t.Fatalf("sarama DeleteConsumerGroupOffset: %v", err)
	}
	offs, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1}})
	if err != nil {
		t.Fatalf("sarama ListConsumerGroupOffsets: %v", err)
	}
	if b0, b1 := offs.GetBlock(topic, 0), offs.GetBlock(topic, 1); b0 == nil || b0.Offset != -1 || b1 == nil || b1.Offset <= 0 {
		t.Errorf("sarama ListConsumerGroupOffsets after deleting partition 0's: %+v %+v", b0, b1)
	}
	if err := admin.DeleteConsumerGroup(group); err != nil {
		t.Fatalf("sarama DeleteConsumerGroup: %v", err)
	}
	if groups, err := admin.ListConsumerGroups(); err != nil || groups[group] != "" {
		t.Errorf("sarama ListConsumerGroups after delete: %v %v", err, groups)
	}
}
