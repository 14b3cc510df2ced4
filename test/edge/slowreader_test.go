package edge

import (
	"bytes"
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

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
