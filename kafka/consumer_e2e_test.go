package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// member848 is a franz-go consumer of the KIP-848 protocol counting the
// records it polls into seen until stopped.
type member848 struct {
	cl   *kgo.Client
	stop chan struct{}
	done chan struct{}
}

type seenRecords struct {
	mu   sync.Mutex
	seen map[string]int
}

func (s *seenRecords) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func startMember848(t *testing.T, seeds []string, topic, group string, seen *seenRecords, opts ...kgo.Opt) *member848 {
	t.Helper()
	m := &member848{stop: make(chan struct{}), done: make(chan struct{})}
	opts = append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)
	m.cl = newClient(t, seeds[0], opts...)
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			fs := m.cl.PollFetches(ctx)
			cancel()
			seen.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { seen.seen[string(r.Value)]++ })
			seen.mu.Unlock()
		}
	}()
	return m
}

// leave stops polling, then closes the client: it commits what it polled
// and leaves the group.
func (m *member848) leave() {
	close(m.stop)
	<-m.done
	m.cl.Close()
}

func waitSeen(t *testing.T, seen *seenRecords, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for seen.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("read %d distinct records, want %d", seen.count(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Consume848 has franz-go's KIP-848 consumers read topic (6 partitions)
// as group while a second and a third member join and the first leaves:
// every record is read exactly once, and ConsumerGroupDescribe shows the
// two members left splitting the partitions. The cluster test
// (package kafka_test) uses it too.
func Consume848(t *testing.T, seeds []string, topic, group string) {
	ctx := testCtx(t)
	seen := &seenRecords{seen: map[string]int{}}
	produceSeeds := func(from, to int) {
		produceValues(t, seeds[0], topic, from, to, kgo.SeedBrokers(seeds...))
	}
	produceSeeds(0, 30)
	a := startMember848(t, seeds, topic, group, seen)
	waitSeen(t, seen, 30)
	b := startMember848(t, seeds, topic, group, seen)
	produceSeeds(30, 60)
	waitSeen(t, seen, 60)
	c := startMember848(t, seeds, topic, group, seen)
	produceSeeds(60, 90)
	waitSeen(t, seen, 90)
	a.leave()
	produceSeeds(90, 120)
	waitSeen(t, seen, 120)
	adm := kadm.NewClient(newClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	var d kadm.DescribedConsumerGroup
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		d = ds[group]
		if d.Err == nil && d.State == "Stable" && len(d.Members) == 2 && len(d.AssignedPartitions()[topic]) == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ConsumerGroupDescribe: state %q, %d members, assigned %v, err %v", d.State, len(d.Members), d.AssignedPartitions(), d.Err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.leave()
	c.leave()
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for v, k := range seen.seen {
		if k != 1 {
			t.Errorf("record %s read %d times", v, k)
		}
	}
	for _, m := range d.Members {
		if n := len(m.Assignment); n != 1 || len(m.Assignment[topic]) != 3 {
			t.Errorf("member %s: assignment %v, want 3 partitions of %s", m.MemberID, m.Assignment, topic)
		}
	}
}

func TestConsumerGroup848OneNode(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "k848", 6)
	Consume848(t, []string{n.addr}, "k848", "g848")
}
