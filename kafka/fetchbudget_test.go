package kafka

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// bigTopic makes topic "big" on n: partition 0 empty, partition 1 holding
// more than the largest fetch (broker.MaxFetchBytes).
func bigTopic(t *testing.T, n *testNode) {
	t.Helper()
	n.createTopic(t, "big", 2)
	value := strings.Repeat("v", 900<<10)
	for size := 0; size <= broker.MaxFetchBytes+(1<<20); size += len(value) {
		if _, err := n.core.Produce(context.Background(), broker.ProduceRequest{Topic: "big", Partition: 1, Batch: testBatch(t, value)}); err != nil {
			t.Fatal(err)
		}
	}
}

// largeFetch asks for the most one fetch may answer from big/part.
func largeFetch(part int32, maxWaitMs int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.ReplicaID, r.MaxWaitMillis, r.MinBytes, r.MaxBytes = 4, -1, maxWaitMs, 1, broker.MaxFetchBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "big"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = part, broker.MaxFetchBytes
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

// fetchedFrom reads a fetch response and returns its size; one that
// carries no batches is much smaller than one carrying a large fetch.
func (c *rawConn) fetchedFrom(wantCorr int32) int {
	c.t.Helper()
	body, err := readFrame(c.br, 1<<30)
	if err != nil {
		c.t.Fatalf("reading answer %d: %v", wantCorr, err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != wantCorr {
		c.t.Fatalf("answer %d, want %d", corr, wantCorr)
	}
	return len(body)
}

// fetchedBytesTotal is logd_fetch_bytes_total on n.
func fetchedBytesTotal(t *testing.T, n *testNode) float64 {
	t.Helper()
	mfs, err := n.core.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == "logd_fetch_bytes_total" {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// A client that pipelines large fetches and never reads the answers holds
// its own connection's budget, not the node's: another connection's fetch
// and a read through the core are answered meanwhile.
func TestUnreadFetchesDoNotStallTheNode(t *testing.T) {
	n := startNode(t)
	bigTopic(t, n)
	hostage := dialRaw(t, n.srv)
	for corr := int32(1); corr <= DefaultMaxInFlight; corr++ {
		hostage.send(frame(largeFetch(1, 0), corr))
	}
	// The first answer is being written: the fetches have started.
	if _, err := hostage.br.Peek(4); err != nil {
		t.Fatal(err)
	}
	waitFetched(t, n, 8*broker.MaxFetchBytes)

	other := dialRaw(t, n.srv)
	other.nc.SetDeadline(time.Now().Add(10 * time.Second))
	other.send(frame(largeFetch(1, 0), 1))
	if got := other.fetchedFrom(1); got < broker.MaxFetchBytes/2 {
		t.Fatalf("another connection's fetch read %d bytes", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := n.core.Fetch(ctx, broker.FetchRequest{MaxBytes: broker.MaxFetchBytes,
		Partitions: []broker.FetchPartition{{Topic: "big", Partition: 1, MaxBytes: broker.MaxFetchBytes}}})
	if err != nil {
		t.Fatalf("a read through the core while a Kafka client reads nothing: %v", err)
	}
	res.Release()
}

// waitFetched waits until the node has read at least want bytes for
// fetches, or for 2 s: the fetches a test pipelined have started reading
// (as many as may).
func waitFetched(t *testing.T, n *testNode, want int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if fetchedBytesTotal(t, n) >= float64(want) {
			return
		}
	}
}

// A client that pipelines more large fetches than the node's read budget
// holds, behind a long poll that wakes last, gets every answer, in order.
func TestPipelinedLargeFetchesNeverDeadlock(t *testing.T) {
	n := startNode(t)
	bigTopic(t, n)
	c := dialRaw(t, n.srv)
	// Each answer must come within 30 s (a deadlock never answers).
	c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	const fetches = DefaultMaxInFlight + 1
	c.send(frame(largeFetch(0, 20_000), 1)) // waits for a record on the empty partition
	for corr := int32(2); corr <= fetches; corr++ {
		c.send(frame(largeFetch(1, 0), corr))
	}
	waitFetched(t, n, 8*broker.MaxFetchBytes)
	if _, err := n.core.Produce(context.Background(), broker.ProduceRequest{Topic: "big", Partition: 0, Batch: testBatch(t, "wake")}); err != nil {
		t.Fatal(err)
	}
	resp := largeFetch(0, 0).ResponseKind().(*kmsg.FetchResponse)
	if corr := c.recv(resp); corr != 1 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 ||
		len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("the long poll's answer: corr %d, %+v", corr, resp.Topics)
	}
	for corr := int32(2); corr <= fetches; corr++ {
		c.nc.SetDeadline(time.Now().Add(30 * time.Second))
		if got := c.fetchedFrom(corr); got < broker.MaxFetchBytes/2 {
			t.Fatalf("fetch %d read %d bytes", corr, got)
		}
	}
}

// A client that leaves a response unread for Config.WriteTimeout is
// disconnected, and what its connection held is freed.
func TestClientThatDoesNotReadIsDisconnected(t *testing.T) {
	n := startNode(t)
	bigTopic(t, n)
	s := startServer(t, n.core, Config{WriteTimeout: 200 * time.Millisecond})
	c := dialRaw(t, s)
	for corr := int32(1); corr <= 4; corr++ {
		c.send(frame(largeFetch(1, 0), corr))
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		open := len(s.conns)
		s.mu.Unlock()
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a connection whose client reads nothing is still open after 20 s")
		}
	}
}

func TestConnBudget(t *testing.T) {
	b := newConnBudget(100)
	ctx := context.Background()
	if err := b.reserve(ctx, 150); err != nil { // larger than the bound: runs alone
		t.Fatal(err)
	}
	reserved := make(chan error, 1)
	go func() { reserved <- b.reserve(ctx, 10) }()
	select {
	case err := <-reserved:
		t.Fatalf("reserved past the bound: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	b.adjust(-150)
	if err := <-reserved; err != nil {
		t.Fatal(err)
	}
	if err := b.reserve(ctx, 90); err != nil { // 100 in all: within the bound
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { reserved <- b.reserve(cctx, 1) }()
	cancel()
	if err := <-reserved; err == nil {
		t.Fatal("a reservation past the bound ended without error when its context did")
	}
}
