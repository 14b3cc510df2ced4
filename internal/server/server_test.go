package server_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/internal/server"
	pb "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/routing"
)

type conn struct {
	log    pb.LogClient
	admin  pb.AdminClient
	health healthpb.HealthClient
	cc     *grpc.ClientConn
}

func dial(t *testing.T, s *node.Node) conn {
	t.Helper()
	cc, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return conn{pb.NewLogClient(cc), pb.NewAdminClient(cc), healthpb.NewHealthClient(cc), cc}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func createTopic(t *testing.T, c conn, name string, parts int32) {
	t.Helper()
	if _, err := c.admin.CreateTopic(ctx(t), &pb.CreateTopicRequest{Name: name, Partitions: parts}); err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v, want code %v", err, code)
	}
	if st, _ := status.FromError(err); st.Message() == "" {
		t.Fatalf("status %v has no message", code)
	}
}

func TestProduceFetchRecords(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "orders", 3)
	var recs []*pb.Record
	for i := range 30 {
		recs = append(recs, &pb.Record{Key: fmt.Appendf(nil, "k%d", i%5), Value: fmt.Appendf(nil, "v%d", i)})
	}
	resp, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "orders", Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, a := range resp.Appends {
		total += a.LastOffset - a.BaseOffset + 1
	}
	if total != 30 {
		t.Fatalf("appended %d records: %+v", total, resp.Appends)
	}
	// Every key lands on routing.ForKey's partition, in order.
	seen := 0
	for p := range int32(3) {
		f, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "orders", Partition: p, Decode: true})
		if err != nil {
			t.Fatal(err)
		}
		last := map[string]int{}
		for i, r := range f.Records {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d record %d has offset %d", p, i, r.Offset)
			}
			if want := routing.ForKey(r.Key, 3); want != p {
				t.Fatalf("key %s on partition %d, want %d", r.Key, p, want)
			}
			var n int
			fmt.Sscanf(string(r.Value), "v%d", &n)
			if prev, ok := last[string(r.Key)]; ok && n < prev {
				t.Fatalf("key %s out of order: %d after %d", r.Key, n, prev)
			}
			last[string(r.Key)] = n
			seen++
		}
		if f.HighWatermark != int64(len(f.Records)) || f.NextOffset != f.HighWatermark {
			t.Fatalf("hw %d next %d records %d", f.HighWatermark, f.NextOffset, len(f.Records))
		}
	}
	if seen != 30 {
		t.Fatalf("fetched %d records", seen)
	}
}

func TestIdempotentBatchRetry(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "t", 1)
	p := int32(0)
	recs := []batch.Record{{Timestamp: 1, Value: []byte("a")}, {Timestamp: 2, Value: []byte("b")}}
	b1 := batch.Encode(nil, 0, batch.Producer{ID: 99, Epoch: 0, Sequence: 0}, recs)
	first, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p, Batch: bytes.Clone(b1)})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p, Batch: bytes.Clone(b1)})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Appends[0].Duplicate || again.Appends[0].BaseOffset != first.Appends[0].BaseOffset {
		t.Fatalf("retry: %+v, first %+v", again.Appends[0], first.Appends[0])
	}
	// A gap in sequences is refused; the next in order is accepted.
	gap := batch.Encode(nil, 0, batch.Producer{ID: 99, Sequence: 5}, recs)
	_, err = c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p, Batch: gap})
	wantCode(t, err, codes.FailedPrecondition)
	next := batch.Encode(nil, 0, batch.Producer{ID: 99, Sequence: 2}, recs)
	r, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p, Batch: next})
	if err != nil || r.Appends[0].BaseOffset != 2 || r.Appends[0].Duplicate {
		t.Fatalf("next: %v %+v", err, r)
	}
	f, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Decode: true})
	if err != nil || len(f.Records) != 4 {
		t.Fatalf("fetch: %v, %d records", err, len(f.Records))
	}
}

func TestDedupSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() *node.Node {
		s, err := node.Start(node.Config{Config: broker.Config{DataDir: dir}, Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	c := dial(t, s)
	createTopic(t, c, "t", 1)
	p := int32(0)
	b := batch.Encode(nil, 0, batch.Producer{ID: 7, Sequence: 0}, []batch.Record{{Timestamp: 1, Value: []byte("x")}})
	if _, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p, Batch: bytes.Clone(b)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = start()
	defer s.Close()
	c = dial(t, s)
	r, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p, Batch: bytes.Clone(b)})
	if err != nil || !r.Appends[0].Duplicate || r.Appends[0].BaseOffset != 0 {
		t.Fatalf("retry after restart: %v %+v", err, r)
	}
}

func TestBadInput(t *testing.T) {
	s := nodetest.Start(t, func(c *node.Config) { c.MaxBatchBytes = 64 << 10 })
	c := dial(t, s)
	createTopic(t, c, "t", 2)
	p0, p9 := int32(0), int32(9)
	good := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: 1, Value: []byte("ok")}})
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-1] ^= 0xff
	big := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: 1, Value: make([]byte, 100<<10)}})
	empty := batch.Encode(nil, 0, batch.NoProducer, nil)
	cases := []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"unknown topic", func() error {
			_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "nope", Partition: &p0, Batch: good})
			return err
		}, codes.NotFound},
		{"unknown partition", func() error {
			_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p9, Batch: good})
			return err
		}, codes.NotFound},
		{"invalid topic name", func() error {
			_, err := c.admin.CreateTopic(ctx(t), &pb.CreateTopicRequest{Name: "a/b", Partitions: 1})
			return err
		}, codes.InvalidArgument},
		{"duplicate create", func() error {
			_, err := c.admin.CreateTopic(ctx(t), &pb.CreateTopicRequest{Name: "t", Partitions: 1})
			return err
		}, codes.AlreadyExists},
		{"zero partitions", func() error {
			_, err := c.admin.CreateTopic(ctx(t), &pb.CreateTopicRequest{Name: "z", Partitions: 0})
			return err
		}, codes.InvalidArgument},
		{"negative partitions", func() error {
			_, err := c.admin.CreateTopic(ctx(t), &pb.CreateTopicRequest{Name: "z", Partitions: -3})
			return err
		}, codes.InvalidArgument},
		{"bad retention", func() error {
			bad := int64(-5)
			_, err := c.admin.CreateTopic(ctx(t), &pb.CreateTopicRequest{Name: "z", Partitions: 1, Config: &pb.TopicConfig{RetentionBytes: &bad}})
			return err
		}, codes.InvalidArgument},
		{"segment_ms that overflows a duration", func() error {
			huge := int64(1<<58 + 1) // wrapped to 1ms before being checked
			_, err := c.admin.CreateTopic(ctx(t), &pb.CreateTopicRequest{Name: "z", Partitions: 1, Config: &pb.TopicConfig{SegmentMs: &huge}})
			return err
		}, codes.InvalidArgument},
		{"alter to a retention_ms that overflows a duration", func() error {
			huge := int64(1<<58 + 1)
			_, err := c.admin.AlterTopic(ctx(t), &pb.AlterTopicRequest{Name: "t", Config: &pb.TopicConfig{RetentionMs: &huge}})
			return err
		}, codes.InvalidArgument},
		{"oversized batch", func() error {
			_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p0, Batch: big})
			return err
		}, codes.ResourceExhausted},
		{"oversized record", func() error {
			_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Records: []*pb.Record{{Value: make([]byte, 65<<10)}}})
			return err
		}, codes.ResourceExhausted},
		{"empty batch", func() error {
			_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p0, Batch: empty})
			return err
		}, codes.InvalidArgument},
		{"empty request", func() error {
			_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t"})
			return err
		}, codes.InvalidArgument},
		{"batch without partition", func() error {
			_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Batch: good})
			return err
		}, codes.InvalidArgument},
		{"crc mismatch", func() error {
			_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p0, Batch: corrupt})
			return err
		}, codes.InvalidArgument},
		{"garbage batch", func() error {
			_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p0, Batch: []byte("hello")})
			return err
		}, codes.InvalidArgument},
		{"negative max bytes", func() error {
			_, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", MaxBytes: -1})
			return err
		}, codes.InvalidArgument},
		{"negative offset", func() error {
			_, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Offset: -1})
			return err
		}, codes.InvalidArgument},
		{"fetch unknown topic", func() error {
			_, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "nope"})
			return err
		}, codes.NotFound},
		{"describe unknown topic", func() error {
			_, err := c.admin.DescribeTopic(ctx(t), &pb.DescribeTopicRequest{Name: "nope"})
			return err
		}, codes.NotFound},
		{"delete unknown topic", func() error {
			_, err := c.admin.DeleteTopic(ctx(t), &pb.DeleteTopicRequest{Name: "nope"})
			return err
		}, codes.NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.call(), tc.code) })
	}
	// Nothing bad was stored, and the log still takes good batches.
	r, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p0, Batch: good})
	if err != nil || r.Appends[0].BaseOffset != 0 {
		t.Fatalf("good batch after bad ones: %v %+v", err, r)
	}
}

func TestFetchLongPollAndOutOfRange(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "t", 1)
	got := make(chan *pb.FetchResponse, 1)
	go func() {
		f, err := c.log.Fetch(context.Background(), &pb.FetchRequest{Topic: "t", Offset: 0, MaxWaitMs: 20000, Decode: true})
		if err != nil {
			t.Error(err)
		}
		got <- f
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Records: []*pb.Record{{Value: []byte("late")}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-got:
		if len(f.Records) != 1 || string(f.Records[0].Value) != "late" {
			t.Fatalf("long poll got %+v", f)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll did not wake on produce")
	}
	// A short wait with nothing new returns empty, not an error.
	f, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Offset: 1, MaxWaitMs: 50})
	if err != nil || len(f.Batches) != 0 || f.HighWatermark != 1 {
		t.Fatalf("empty poll: %v %+v", err, f)
	}
}

func TestOutOfRangeCarriesBounds(t *testing.T) {
	// The details are what clients use to reset. The end-to-end case (a
	// fetch below a trimmed log start) is in the retention tests.
	err := server.OutOfRangeForTest(1, 2, 3)
	st := status.Convert(err)
	if st.Code() != codes.OutOfRange {
		t.Fatal(st)
	}
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if e, ok := d.(*errdetails.ErrorInfo); ok {
			info = e
		}
	}
	if info == nil || info.Metadata["log_start_offset"] != "2" || info.Metadata["high_watermark"] != "3" {
		t.Fatalf("details %v", st.Details())
	}
}

func TestSubscribeTails(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "t", 1)
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub, err := c.log.Subscribe(sctx, &pb.SubscribeRequest{Topic: "t", Decode: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Records: []*pb.Record{{Value: fmt.Appendf(nil, "%d", i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for n < 5 {
		m, err := sub.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range m.Records {
			if r.Offset != int64(n) {
				t.Fatalf("offset %d, want %d", r.Offset, n)
			}
			n++
		}
	}
	cancel()
}

func TestProduceStreamPipelines(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "t", 2)
	st, err := c.log.ProduceStream(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	go func() {
		for i := range n {
			p := int32(i % 2)
			b := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: int64(i), Value: fmt.Appendf(nil, "%d", i)}})
			if err := st.Send(&pb.ProduceRequest{Topic: "t", Partition: &p, Batch: b, RequestId: uint64(i)}); err != nil {
				t.Error(err)
				return
			}
		}
		// One bad request does not end the stream.
		st.Send(&pb.ProduceRequest{Topic: "nope", Records: []*pb.Record{{Value: []byte("x")}}, RequestId: n})
		st.CloseSend()
	}()
	next := [2]int64{}
	bad := 0
	for range n + 1 {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.ErrorCode != 0 {
			if codes.Code(r.ErrorCode) != codes.NotFound || r.RequestId != n {
				t.Fatalf("unexpected error response %+v", r)
			}
			bad++
			continue
		}
		a := r.Appends[0]
		// Per partition, responses come in request order with contiguous offsets.
		if a.BaseOffset != next[a.Partition] || int32(r.RequestId%2) != a.Partition {
			t.Fatalf("response %+v, want offset %d", r, next[a.Partition])
		}
		next[a.Partition]++
	}
	if bad != 1 {
		t.Fatalf("%d error responses", bad)
	}
}

func TestHealthAndShutdown(t *testing.T) {
	s, err := node.Start(node.Config{Config: broker.Config{DataDir: t.TempDir()}, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, s)
	h, err := c.health.Check(ctx(t), &healthpb.HealthCheckRequest{})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", err, h)
	}
	createTopic(t, c, "t", 1)
	done := make(chan error, 1)
	go func() {
		_, err := c.log.Fetch(context.Background(), &pb.FetchRequest{Topic: "t", MaxWaitMs: 60000})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not return while a long poll was waiting")
	}
	<-done
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestTopicAdmin(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "a", 2)
	createTopic(t, c, "b", 1)
	l, err := c.admin.ListTopics(ctx(t), &pb.ListTopicsRequest{})
	if err != nil || len(l.Topics) != 2 || l.Topics[0].Name != "a" {
		t.Fatalf("list: %v %+v", err, l)
	}
	hours := int64(3600_000)
	a, err := c.admin.AlterTopic(ctx(t), &pb.AlterTopicRequest{Name: "a", Config: &pb.TopicConfig{RetentionMs: &hours}})
	if err != nil || a.Topic.Config.GetRetentionMs() != hours || a.Topic.Config.GetRetentionBytes() != -1 {
		t.Fatalf("alter: %v %+v", err, a)
	}
	d, err := c.admin.DescribeTopic(ctx(t), &pb.DescribeTopicRequest{Name: "a"})
	if err != nil || len(d.Partitions) != 2 || !proto.Equal(d.Topic.Config, a.Topic.Config) {
		t.Fatalf("describe: %v %+v", err, d)
	}
	if _, err := c.admin.DeleteTopic(ctx(t), &pb.DeleteTopicRequest{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	// The name can be reused, and starts empty.
	createTopic(t, c, "a", 1)
	d, err = c.admin.DescribeTopic(ctx(t), &pb.DescribeTopicRequest{Name: "a"})
	if err != nil || d.Partitions[0].HighWatermark != 0 || len(d.Partitions) != 1 {
		t.Fatalf("recreated: %v %+v", err, d)
	}
}

// TestShutdownStatusAndClientDisconnect: a subscription open when the
// server shuts down ends with UNAVAILABLE saying so; a client that
// disconnects in the middle of a ProduceStream leaves no handler behind.
func TestShutdownStatusAndClientDisconnect(t *testing.T) {
	s, err := node.Start(node.Config{Config: broker.Config{DataDir: t.TempDir()}, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, s)
	createTopic(t, c, "t", 1)

	before := runtime.NumGoroutine()
	sctx, cancel := context.WithCancel(context.Background())
	st, err := c.log.ProduceStream(sctx)
	if err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	for i := range 20 {
		b := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: 1, Value: []byte("x")}})
		if err := st.Send(&pb.ProduceRequest{Topic: "t", Partition: &p, Batch: b, RequestId: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	cancel() // disconnect without reading the answers or closing the send side
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Fatalf("%d goroutines after the client left, %d before", n, before)
	}
	// Whatever was admitted before the disconnect is whole and readable.
	f, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Decode: true})
	if err != nil {
		t.Fatalf("after disconnect: %v", err)
	}
	for i, r := range f.Records {
		if r.Offset != int64(i) {
			t.Fatalf("after disconnect: record %d has offset %d", i, r.Offset)
		}
	}

	// A topic nothing writes to: appends still finishing from the stream
	// above must not reach the subscription (past the end of "t" is
	// OUT_OF_RANGE).
	createTopic(t, c, "idle", 1)
	sub, err := c.log.Subscribe(context.Background(), &pb.SubscribeRequest{Topic: "idle", Offset: 0})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	go s.Close()
	_, err = sub.Recv()
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "shutting down") {
		t.Fatalf("subscription at shutdown ended with %v", err)
	}
	s.Close()
}

func TestConnectionCap(t *testing.T) {
	s := nodetest.Start(t, func(c *node.Config) { c.MaxConnections = 2 })
	call := func(cc *grpc.ClientConn) error {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := pb.NewAdminClient(cc).ListTopics(cctx, &pb.ListTopicsRequest{})
		return err
	}
	var held []*grpc.ClientConn
	for range 2 {
		cc := dial(t, s).cc
		if err := call(cc); err != nil {
			t.Fatal(err)
		}
		held = append(held, cc)
	}
	// A third connection is closed on arrival: its calls fail, the two
	// open ones keep working.
	third := dial(t, s).cc
	if err := call(third); status.Code(err) != codes.Unavailable && status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("third connection: %v, want UNAVAILABLE", err)
	}
	for _, cc := range held {
		if err := call(cc); err != nil {
			t.Fatalf("an open connection stopped working: %v", err)
		}
	}
	// Once one closes, a new connection is served.
	held[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := call(dial(t, s).cc)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection served after one closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
