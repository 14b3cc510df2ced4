package edge

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/logd/logd/proto/logd/v1"
)

// stalledReadBound is how much the server's memory may grow with stalled
// readers: its server-wide read budget (128 MiB of responses waiting to be
// sent, internal/server) plus 64 MiB for what gRPC and the runtime add.
const stalledReadBound = 192 << 20

// slowReaders opens n Subscribe streams from offset 0, each on its own
// connection, that never read a message. They end with the test.
func slowReaders(t *testing.T, s *server, topic string, n int, maxBytes int32) {
	for range n {
		cc := s.dial(grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(128 << 20)))
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		if _, err := pb.NewLogClient(cc).Subscribe(ctx, &pb.SubscribeRequest{Topic: topic, Offset: 0, MaxBytes: maxBytes}); err != nil {
			t.Fatal(err)
		}
	}
}

// produceAndFollow produces total bytes in records of size bytes while a
// subscriber on another connection follows the partition; it fails when the
// follower does not get every record within 30s of the last produce.
func produceAndFollow(t *testing.T, s *server, topic string, total, size int) {
	t.Helper()
	logc := pb.NewLogClient(s.dial())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sub, err := pb.NewLogClient(s.dial()).Subscribe(ctx, &pb.SubscribeRequest{Topic: topic, Offset: 0, Decode: true})
	if err != nil {
		t.Fatal(err)
	}
	n := total / size
	followed := make(chan int64, 1)
	go func() {
		var next int64
		for next < int64(n) {
			resp, err := sub.Recv()
			if err != nil {
				break
			}
			next = resp.NextOffset
		}
		followed <- next
	}()
	val := bytes.Repeat([]byte{'s'}, size)
	start := time.Now()
	for i := range n {
		if _, err := logc.Produce(timeout(t, 10*time.Second), &pb.ProduceRequest{Topic: topic, Records: []*pb.Record{{Value: val}}}); err != nil {
			t.Fatalf("produce %d while slow readers hang: %v", i, err)
		}
	}
	select {
	case next := <-followed:
		if next < int64(n) {
			t.Fatalf("the follower stopped at offset %d of %d", next, n)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the follower did not get all %d records within 30s of the last produce", n)
	}
	t.Logf("produced %d MiB in %s; a follower kept up", total>>20, time.Since(start).Round(time.Millisecond))
}

// TestSlowSubscribersDefaultMaxBytes: 32 subscribers that never read while
// 16 MiB are produced. Flow control stops each one's sends; what the
// server holds for each is bounded by one response (1 MiB by default), so
// memory stays bounded, and producers and a follower are served.
func TestSlowSubscribersDefaultMaxBytes(t *testing.T) {
	s := startServer(t, 0)
	cc := s.dial()
	if _, err := pb.NewAdminClient(cc).CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "slow", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	base := s.rss()
	slowReaders(t, s, "slow", 32, 0)
	produceAndFollow(t, s, "slow", 16<<20, 256<<10)
	time.Sleep(500 * time.Millisecond)
	s.alive()
	// 32 responses of 1 MiB, each held as a message and its encoding.
	s.checkRSS("32 stalled subscribers, 16 MiB produced", base, stalledReadBound)
	newProbe(t, s, "edge-probe").check("with the stalled subscribers")
}

// TestSlowSubscribersLargeMaxBytes: 8 subscribers asking for the largest
// responses the server gives (it caps max_bytes) that never
// read, while 32 MiB are produced. Each stalled subscriber may hold what it
// read when its stream stopped; memory must still stay bounded.
func TestSlowSubscribersLargeMaxBytes(t *testing.T) {
	s := startServer(t, 0)
	cc := s.dial()
	if _, err := pb.NewAdminClient(cc).CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "slow", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	base := s.rss()
	slowReaders(t, s, "slow", 8, 1<<30)
	produceAndFollow(t, s, "slow", 32<<20, 512<<10)
	time.Sleep(500 * time.Millisecond)
	s.alive()
	s.checkRSS("8 stalled subscribers with max_bytes 1 GiB, 32 MiB produced", base, stalledReadBound)
	newProbe(t, s, "edge-probe").check("with the stalled subscribers")
}

// TestSlowCatchUpSubscribers: 8 subscribers start at offset 0 of a
// partition already holding 32 MiB, ask for the largest responses (max_bytes
// 1 GiB; the server caps it) and never read. Each one's first response is as
// large as the server allows and stalls in flow control; the server's memory
// must still stay bounded, and others keep producing and reading. (Before
// a7daafb's read budget and caps, with 64 MiB messages, this cost 510 MiB.)
func TestSlowCatchUpSubscribers(t *testing.T) {
	s := startServer(t, 0)
	cc := s.dial()
	if _, err := pb.NewAdminClient(cc).CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "slow", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	produceAndFollow(t, s, "slow", 32<<20, 512<<10)
	base := s.rss()
	slowReaders(t, s, "slow", 8, 1<<30)
	time.Sleep(2 * time.Second)
	s.alive()
	s.checkRSS("8 stalled catch-up subscribers with max_bytes 1 GiB over 32 MiB", base, stalledReadBound)
	produceAndFollow(t, s, "slow", 8<<20, 512<<10)
	newProbe(t, s, "edge-probe").check("with the stalled subscribers")
}

// floodSubscribers is how many non-reading subscribers the flood test
// opens, and floodRSSBound how much the server's memory may grow with
// them: the subscriptions' budget (64 MiB, internal/server/subscribe.go),
// twice for the garbage between two collections, and 128 MiB for the
// connections' buffers, the goroutines and the runtime. (Measured: about
// 140 MiB; before the subscriptions had a budget of their own, 380 to 590
// MiB, and every Fetch waited.)
const (
	floodSubscribers = 300
	floodRSSBound    = 256 << 20
)

// TestNonReadingSubscriberFlood: 300 subscribers, each on its own
// connection, ask for 4 MiB messages from offset 0 of a partition holding
// 32 MiB and never read. A slow reader may cost only its own stream: a
// Fetch on the same partition and a probe's produce and fetch must still be
// answered, and the server's memory must stay bounded. (Before the
// subscriptions had a budget of their own, about 32 of them held the whole
// read budget and every Fetch waited until they went away.)
func TestNonReadingSubscriberFlood(t *testing.T) {
	s := startServer(t, 0)
	cc := s.dial()
	if _, err := pb.NewAdminClient(cc).CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "flood", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	produceAndFollow(t, s, "flood", 32<<20, 512<<10)
	p := newProbe(t, s, "edge-probe")
	base := s.rss()
	slowReaders(t, s, "flood", floodSubscribers, 4<<20)
	time.Sleep(3 * time.Second)
	s.alive()
	logc := pb.NewLogClient(s.dial())
	var worst time.Duration
	for i := range 5 {
		start := time.Now()
		f, err := logc.Fetch(timeout(t, 30*time.Second), &pb.FetchRequest{Topic: "flood", Offset: int64(i), MaxBytes: 64 << 10})
		worst = max(worst, time.Since(start))
		if err != nil {
			t.Errorf("a Fetch with %d non-reading subscribers: %v after %s", floodSubscribers, err, worst.Round(time.Millisecond))
			break
		}
		if len(f.Batches) == 0 {
			t.Fatalf("a Fetch at offset %d with %d non-reading subscribers read nothing", i, floodSubscribers)
		}
	}
	t.Logf("with %d non-reading subscribers: slowest of the Fetches %s", floodSubscribers, worst.Round(time.Millisecond))
	s.checkRSS(fmt.Sprintf("%d non-reading subscribers with max_bytes 4 MiB over 32 MiB", floodSubscribers), base, floodRSSBound)
	if !t.Failed() {
		p.check("with the non-reading subscribers")
	}
}

// TestSlowSubscriberEnded: a subscriber that leaves its messages unread for
// the server's --send-timeout gets, once it reads again, what was queued for
// it and then RESOURCE_EXHAUSTED (reason SLOW_SUBSCRIBER) saying where to
// subscribe again from; the server's other clients are served meanwhile.
func TestSlowSubscriberEnded(t *testing.T) {
	s := startServerWith(t, t.TempDir(), 0, "--send-timeout", "1s")
	cc := s.dial()
	if _, err := pb.NewAdminClient(cc).CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "slow", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	produceAndFollow(t, s, "slow", 32<<20, 256<<10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub, err := pb.NewLogClient(s.dial()).Subscribe(ctx, &pb.SubscribeRequest{Topic: "slow", MaxBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	newProbe(t, s, "edge-probe").check("with a stalled subscriber")
	var next int64
	for {
		resp, err := sub.Recv()
		if err != nil {
			st := status.Convert(err)
			if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "read nothing") {
				t.Fatalf("the stalled subscription ended with %v, want RESOURCE_EXHAUSTED saying the client read nothing", err)
			}
			want := fmt.Sprintf("from offset %d", next)
			if !strings.Contains(st.Message(), want) {
				t.Errorf("the status does not say to subscribe again %s: %v", want, st.Message())
			}
			t.Logf("after offset %d: %v", next, err)
			return
		}
		next = resp.NextOffset
		if next >= 128 {
			t.Fatalf("read the whole partition (to %d): the stalled subscription was not ended", next)
		}
	}
}
