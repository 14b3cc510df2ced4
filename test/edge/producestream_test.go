package edge

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	pb "github.com/logd/logd/proto/logd/v1"
)

// TestProduceStreamManyTopics sends, on one ProduceStream, 20,000 requests
// each naming a different topic that does not exist, reading every
// response. Each is answered NOT_FOUND in its response; what the server
// keeps for the stream must not grow with the number of distinct topics
// named. (Before 0d33fff each distinct topic/partition started a lane
// goroutine and channel that lived until the stream ended: +113 MiB.)
func TestProduceStreamManyTopics(t *testing.T) {
	const n = 20_000
	s := startServer(t, 0)
	p := newProbe(t, s, "edge-probe")
	base := s.rss()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := pb.NewLogClient(s.dial()).ProduceStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan map[codes.Code]int, 1)
	go func() {
		tally := map[codes.Code]int{}
		for range n {
			resp, err := st.Recv()
			if err != nil {
				tally[codes.Unknown]++
				break
			}
			tally[codes.Code(resp.ErrorCode)]++
		}
		answered <- tally
	}()
	for i := range n {
		if err := st.Send(&pb.ProduceRequest{Topic: fmt.Sprintf("absent-%d", i), RequestId: uint64(i),
			Records: []*pb.Record{{Value: []byte("v")}}}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	tally := <-answered
	t.Logf("%d requests on one stream: %v", n, tally)
	if tally[codes.NotFound] != n {
		t.Errorf("want %d NOT_FOUND answers, got %v", n, tally)
	}
	p.check("with the stream open")
	s.checkRSS(fmt.Sprintf("one ProduceStream after %d distinct topics", n), base, 32<<20)
	st.CloseSend()
}
