package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// kafkagoMember is a kafka-go Reader in a consumer group that commits
// each record before it hands it on, until stopped.
type kafkagoMember struct {
	r      *kafkago.Reader
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func startKafkagoMember(t *testing.T, seeds []string, group, topic string, out chan<- clientRecord) *kafkagoMember {
	t.Helper()
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers: seeds, GroupID: group, Topic: topic,
		StartOffset: kafkago.FirstOffset, MaxWait: 250 * time.Millisecond,
		HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second,
		RebalanceTimeout: 10 * time.Second, MaxAttempts: 50,
	})
	ctx, cancel := context.WithCancel(context.Background())
	m := &kafkagoMember{r: r, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			msg, err := r.FetchMessage(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				t.Logf("kafka-go fetch: %v", err)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			// Commit before handing the record on; a commit that fails
			// leaves it to be read again, which the test would see.
			for r.CommitMessages(ctx, msg) != nil && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
			}
			out <- clientRecord{Key: string(msg.Key), Value: string(msg.Value), Partition: int32(msg.Partition), Offset: msg.Offset}
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *kafkagoMember) stop() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
		m.r.Close()
	})
}

func kafkagoProduce(t *testing.T, w *kafkago.Writer, done <-chan []kafkago.Message, prefix string, n int) []clientRecord {
	t.Helper()
	var msgs []kafkago.Message
	for i := range n {
		msgs = append(msgs, kafkago.Message{Key: fmt.Appendf(nil, "%s-k%d", prefix, i), Value: fmt.Appendf(nil, "%s-v%d", prefix, i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go WriteMessages: %v", err)
	}
	var out []clientRecord
	for len(out) < n {
		select {
		case ms := <-done:
			for _, m := range ms {
				out = append(out, clientRecord{Key: string(m.Key), Value: string(m.Value), Partition: int32(m.Partition), Offset: m.Offset})
			}
		case <-ctx.Done():
			t.Fatalf("kafka-go reported %d of %d records written", len(out), n)
		}
	}
	return out
}

// segmentio/kafka-go (Writer with acks=all and its murmur2 balancer,
// Reader in a group, Client's admin) on three nodes: see
// cluster_clients_rig_test.go. kafka-go has no idempotent producer.
func TestKafkaGoCluster(t *testing.T) {
	r := newClientRig(t)
	const topic, group = "kgo", "kgo-group"
	cl := &kafkago.Client{Addr: kafkago.TCP(r.seeds...), Timeout: 30 * time.Second}
	kafkagoAdminTopic(t, cl, topic)
	r.checkTopic(topic)

	written := make(chan []kafkago.Message, 100)
	w := &kafkago.Writer{
		Addr: kafkago.TCP(r.seeds...), Topic: topic, Balancer: &kafkago.Murmur2Balancer{},
		RequiredAcks: kafkago.RequireAll, BatchTimeout: 10 * time.Millisecond, MaxAttempts: 50,
		WriteBackoffMax: 500 * time.Millisecond,
		Completion: func(ms []kafkago.Message, err error) {
			if err == nil {
				written <- ms
			}
		},
	}
	defer w.Close()

	recs := make(chan clientRecord, 1000)
	a := startKafkagoMember(t, r.seeds, group, topic, recs)
	b := startKafkagoMember(t, r.seeds, group, topic, recs)
	r.waitGroupStable(group, 2)
	first := kafkagoProduce(t, w, written, "a", 30)
	r.checkRouting(first, 3)
	r.checkExactlyOnce("two members", first, collect(t, "two members", recs, len(first)))
	noMore(t, "two members", recs)
	a.stop()
	b.stop()
	r.checkCommittedAtEnd(group, topic)

	second := kafkagoProduce(t, w, written, "b", 12)
	c := startKafkagoMember(t, r.seeds, group, topic, recs)
	r.checkExactlyOnce("restarted member", second, collect(t, "restarted member", recs, len(second)))

	r.moveCoordinator()
	third := kafkagoProduce(t, w, written, "c", 12)
	r.checkExactlyOnce("after the coordinator moved", third, collect(t, "after the coordinator moved", recs, len(third)))
	noMore(t, "after the coordinator moved", recs)
	r.checkCommittedAtEnd(group, topic)

	kafkagoAdminGroup(t, cl, group, topic, c.stop)
	del, err := cl.DeleteTopics(testCtx(t), &kafkago.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil || del.Errors[topic] != nil {
		t.Fatalf("kafka-go DeleteTopics: %v %v", err, del)
	}
}

func kafkagoAdminTopic(t *testing.T, cl *kafkago.Client, topic string) {
	t.Helper()
	ctx := testCtx(t)
	ct, err := cl.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{{Topic: topic, NumPartitions: 3, ReplicationFactor: 3}}})
	if err != nil || ct.Errors[topic] != nil {
		t.Fatalf("kafka-go CreateTopics: %v %v", err, ct)
	}
	md, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != 3 || len(md.Brokers) != 3 {
		t.Fatalf("kafka-go Metadata: %v %+v", err, md)
	}
	for _, p := range md.Topics[0].Partitions {
		if len(p.Replicas) != 3 {
			t.Errorf("kafka-go Metadata: partition %+v", p)
		}
	}
	dc, err := cl.DescribeConfigs(ctx, &kafkago.DescribeConfigsRequest{Resources: []kafkago.DescribeConfigRequestResource{{ResourceType: kafkago.ResourceTypeTopic, ResourceName: topic}}})
	if err != nil || len(dc.Resources) != 1 || dc.Resources[0].Error != nil {
		t.Fatalf("kafka-go DescribeConfigs: %v %+v", err, dc)
	}
	got := map[string]string{}
	for _, e := range dc.Resources[0].ConfigEntries {
		got[e.ConfigName] = e.ConfigValue
	}
	if got["retention.ms"] == "" || got["cleanup.policy"] != "delete" {
		t.Errorf("kafka-go DescribeConfigs: %v", got)
	}
}

func kafkagoAdminGroup(t *testing.T, cl *kafkago.Client, group, topic string, stop func()) {
	t.Helper()
	ctx := testCtx(t)
	lg, err := cl.ListGroups(ctx, &kafkago.ListGroupsRequest{})
	if err != nil || lg.Error != nil {
		t.Fatalf("kafka-go ListGroups: %v %+v", err, lg)
	}
	found := false
	for _, g := range lg.Groups {
		found = found || g.GroupID == group
	}
	if !found {
		t.Errorf("kafka-go ListGroups: %+v lacks %s", lg.Groups, group)
	}
	dg, err := cl.DescribeGroups(ctx, &kafkago.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil || len(dg.Groups) != 1 || dg.Groups[0].Error != nil || dg.Groups[0].GroupState != "Stable" || len(dg.Groups[0].Members) != 1 {
		t.Fatalf("kafka-go DescribeGroups: %v %+v", err, dg)
	}
	stop()
	od, err := cl.OffsetDelete(ctx, &kafkago.OffsetDeleteRequest{GroupID: group, Topics: map[string][]int{topic: {0}}})
	if err != nil || od.Error != nil || len(od.Topics[topic]) != 1 || od.Topics[topic][0].Error != nil {
		t.Fatalf("kafka-go OffsetDelete: %v %+v", err, od)
	}
	of, err := cl.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0, 1}}})
	if err != nil || of.Error != nil {
		t.Fatalf("kafka-go OffsetFetch: %v %+v", err, of)
	}
	for _, p := range of.Topics[topic] {
		if (p.Partition == 0) != (p.CommittedOffset == -1) {
			t.Errorf("kafka-go OffsetFetch after deleting partition 0's offset: %+v", of.Topics[topic])
		}
	}
	dl, err := cl.DeleteGroups(ctx, &kafkago.DeleteGroupsRequest{GroupIDs: []string{group}})
	if err != nil || dl.Errors[group] != nil {
		t.Fatalf("kafka-go DeleteGroups: %v %+v", err, dl)
	}
	dg, err = cl.DescribeGroups(ctx, &kafkago.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err == nil && len(dg.Groups) == 1 && !errors.Is(dg.Groups[0].Error, kafkago.GroupIdNotFound) && dg.Groups[0].GroupState != "Dead" {
		t.Errorf("kafka-go DescribeGroups after delete: %+v", dg.Groups[0])
	}
}
