package edge

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/logd/logd/internal/batch"
	pb "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/routing"
)

// The server's defaults (internal/server): a batch or request of records is
// at most 1 MiB; gRPC messages at most that plus 64 KiB.
const (
	maxBatchBytes = 1 << 20
	maxRecvBytes  = maxBatchBytes + 64<<10
)

// TestOversizedMessages sends requests over each size limit: each gets
// RESOURCE_EXHAUSTED (or INVALID_ARGUMENT for a name over its limit), the
// server stays up and serves others, and a huge message does not cost its
// size in memory.
func TestOversizedMessages(t *testing.T) {
	s := startServer(t, 0)
	p := newProbe(t, s, "edge-probe")
	cc := s.dial()
	logc := pb.NewLogClient(cc)
	if _, err := pb.NewAdminClient(cc).CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "big", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	base := s.rss()
	part0 := proto.Int32(0)
	oneMiB := bytes.Repeat([]byte{'v'}, maxBatchBytes)
	cases := []struct {
		name string
		req  *pb.ProduceRequest
		want codes.Code
	}{
		{"a message over the gRPC limit", &pb.ProduceRequest{Topic: "big", Records: []*pb.Record{{Value: bytes.Repeat([]byte{'x'}, 2*maxRecvBytes)}}}, codes.ResourceExhausted},
		{"a 64 MiB message", &pb.ProduceRequest{Topic: "big", Records: []*pb.Record{{Value: bytes.Repeat([]byte{'x'}, 64<<20)}}}, codes.ResourceExhausted},
		{"a record over the batch limit", &pb.ProduceRequest{Topic: "big", Records: []*pb.Record{{Value: oneMiB}}}, codes.ResourceExhausted},
		{"a client batch over the batch limit", &pb.ProduceRequest{Topic: "big", Partition: part0,
			Batch: batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Value: oneMiB}})}, codes.ResourceExhausted},
		{"a topic name of 100 KiB", &pb.ProduceRequest{Topic: strings.Repeat("t", 100<<10), Records: []*pb.Record{{Value: []byte("v")}}}, codes.InvalidArgument},
	}
	for _, c := range cases {
		before := s.rss()
		_, err := logc.Produce(timeout(t, 30*time.Second), c.req)
		got := status.Code(err)
		msg := status.Convert(err).Message()
		if len(msg) > 160 {
			msg = fmt.Sprintf("%s...(%d bytes)", msg[:160], len(msg))
		}
		switch {
		case got == c.want:
			t.Logf("%s: %s: %s", c.name, got, msg)
		case c.want == codes.InvalidArgument && got == codes.NotFound:
			// An unknown topic is a clear answer too.
			t.Logf("%s: %s: %s", c.name, got, msg)
		default:
			t.Errorf("%s: got %s %s, want %s", c.name, got, msg, c.want)
		}
		p.check(c.name)
		t.Logf("  RSS %d -> %d MiB", before>>20, s.rss()>>20)
	}
	// Nothing of it was stored.
	f, err := logc.Fetch(timeout(t, 10*time.Second), &pb.FetchRequest{Topic: "big", Offset: 0})
	if err != nil {
		t.Fatal(err)
	}
	if f.HighWatermark != 0 {
		t.Errorf("rejected produces left %d records in the log", f.HighWatermark)
	}
	s.checkRSS("after oversized requests", base, 64<<20)

	// A fetch asking for more than the server gives: capped, answered.
	for range 8 {
		if _, err := logc.Produce(timeout(t, 10*time.Second), &pb.ProduceRequest{Topic: "big",
			Records: []*pb.Record{{Value: bytes.Repeat([]byte{'y'}, 900<<10)}}}); err != nil {
			t.Fatal(err)
		}
	}
	f, err = logc.Fetch(timeout(t, 10*time.Second), &pb.FetchRequest{Topic: "big", Offset: 0, MaxBytes: math.MaxInt32},
		grpc.MaxCallRecvMsgSize(math.MaxInt32))
	if err != nil {
		t.Fatalf("fetch with max_bytes MaxInt32: %v", err)
	}
	t.Logf("fetch with max_bytes MaxInt32: %d bytes, next offset %d", len(f.Batches), f.NextOffset)
	p.check("after the large fetch")
}

// TestRejectedProduceAppendsNothing: a produce of plain records routed to
// two partitions, one of which ends up over the batch limit once encoded,
// is rejected with RESOURCE_EXHAUSTED; nothing of it may be stored, or a
// client retrying the rejected request (smaller) duplicates records.
func TestRejectedProduceAppendsNothing(t *testing.T) {
	s := startServer(t, 0)
	cc := s.dial()
	if _, err := pb.NewAdminClient(cc).CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "two", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	keyFor := func(part int32) []byte {
		for i := 0; ; i++ {
			k := []byte(fmt.Sprintf("k%d", i))
			if routing.ForKey(k, 2) == part {
				return k
			}
		}
	}
	small, big := keyFor(0), keyFor(1)
	// Key+value sizes plus the server's 7-byte minimum per record total
	// just under the limit (so the request passes the server's early size
	// check); partition 1's encoded batch, with its 61-byte header, is over.
	bigValue := bytes.Repeat([]byte{'v'}, maxBatchBytes-len(small)-len("small")-len(big)-2*7-1)
	logc := pb.NewLogClient(cc)
	_, err := logc.Produce(timeout(t, 30*time.Second), &pb.ProduceRequest{Topic: "two", Records: []*pb.Record{
		{Key: small, Value: []byte("small")},
		{Key: big, Value: bigValue},
	}})
	if err == nil {
		t.Fatal("the server accepted a request whose partition-1 batch encodes over the limit")
	}
	t.Logf("rejected: %v", err)
	lo, err2 := logc.ListOffsets(timeout(t, 10*time.Second), &pb.ListOffsetsRequest{Topic: "two"})
	if err2 != nil {
		t.Fatal(err2)
	}
	for _, po := range lo.Partitions {
		if po.HighWatermark != 0 {
			t.Errorf("partition %d holds %d record(s) of a produce that was answered %s: a retry would duplicate them",
				po.Partition, po.HighWatermark, status.Code(err))
		}
	}
}

// TestPlainRecordsRequestMemory: a request of 300,000 empty plain records
// (600 KB on the wire, under every limit) must be rejected without costing
// the server more than a bounded amount of memory. gRPC's decoding of the
// request alone costs about 32 MiB; the bound leaves the handler 32 MiB
// more. (Before a7daafb the handler converted and encoded every record, a
// 2.7 MB batch, before the size check rejected it: RSS grew by about
// 130 MiB per such request.)
func TestPlainRecordsRequestMemory(t *testing.T) {
	s := startServer(t, 0)
	p := newProbe(t, s, "edge-probe")
	cc := s.dial()
	if _, err := pb.NewAdminClient(cc).CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "many", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	empties := make([]*pb.Record, 300_000) // 0 bytes of key and value each, ~7 encoded
	for i := range empties {
		empties[i] = &pb.Record{}
	}
	base := s.rss()
	_, err := pb.NewLogClient(cc).Produce(timeout(t, 30*time.Second), &pb.ProduceRequest{Topic: "many", Records: empties})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("300,000 empty records: got %v, want RESOURCE_EXHAUSTED (their encoding is over the batch limit)", err)
	} else {
		t.Logf("300,000 empty records: %s", status.Convert(err).Message())
	}
	p.check("after 300,000 empty records")
	s.checkRSS("after 300,000 empty records", base, 64<<20)
}
