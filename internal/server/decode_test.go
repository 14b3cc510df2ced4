package server_test

import (
	"encoding/base64"
	"encoding/binary"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// issue17Batch: one record whose value length says 10^9 bytes, CRC right.
const issue17Batch = "AAAAAAAAAAAAAAA9AAAAAAKe4XrZAAAAAAAAAAABi8/laAAAAAGLz+VoAP//////////////////AAAAARYAAAACa4Co1rkHAA=="

// TestDecodingReadersSkipAStoredBadBatch: a batch stored before produce
// validated records (issue 17 item 1) costs decoding readers its own
// records only. A read from before it gets the records before it; a read
// at it fails DATA_LOSS naming its offsets; a read after it works.
func TestDecodingReadersSkipAStoredBadBatch(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "t", 1)
	produce := func(v string) {
		t.Helper()
		if _, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Records: []*pb.Record{{Value: []byte(v)}}}); err != nil {
			t.Fatal(err)
		}
	}
	produce("a")
	produce("b")
	bad, _ := base64.StdEncoding.DecodeString(issue17Batch)
	if err := s.AppendUncheckedForTest("t", 0, bad); err != nil {
		t.Fatal(err)
	}
	produce("c")

	f, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Offset: 0, Decode: true})
	if err != nil {
		t.Fatalf("fetch from 0, before the bad batch: %v", err)
	}
	if len(f.Records) != 2 || f.NextOffset != 2 || len(f.Batches) == 0 {
		t.Fatalf("fetch from 0: %d records, next offset %d; want a and b, then 2", len(f.Records), f.NextOffset)
	}
	_, err = c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Offset: 2, Decode: true})
	md := map[string]string{}
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			md = ei.Metadata
		}
	}
	if status.Code(err) != codes.DataLoss || md["first_offset"] != "2" || md["last_offset"] != "2" || md["next_offset"] != "3" {
		t.Fatalf("fetch at the bad batch: %v %v, want DATA_LOSS naming offsets 2 to 2", err, md)
	}
	f, err = c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Offset: 3, Decode: true})
	if err != nil || len(f.Records) != 1 || string(f.Records[0].Value) != "c" {
		t.Fatalf("fetch after the bad batch: %v %v", err, f)
	}
	// A subscription gets the records before the bad batch, then ends
	// naming it.
	sub, err := c.log.Subscribe(ctx(t), &pb.SubscribeRequest{Topic: "t", Offset: 0, Decode: true})
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for {
		m, err := sub.Recv()
		if err != nil {
			if status.Code(err) != codes.DataLoss || got != 2 {
				t.Fatalf("subscription ended with %v after %d records, want DATA_LOSS after 2", err, got)
			}
			break
		}
		got += len(m.Records)
	}
}

// TestDecodedHeaderKeyIsUTF8: a stored header key that is not UTF-8 reads
// back with U+FFFD in place of its bad bytes, instead of failing the
// response INTERNAL (issue 17 item 6); produce refuses such a key.
func TestDecodedHeaderKeyIsUTF8(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "t", 1)
	b := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: 1, Value: []byte("v"), Headers: []batch.Header{{Key: "k\xff", Value: []byte("x")}}}})
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	p0 := int32(0)
	_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p0, Batch: b})
	wantCode(t, err, codes.InvalidArgument)
	if err := s.AppendUncheckedForTest("t", 0, b); err != nil {
		t.Fatal(err)
	}
	f, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Offset: 0, Decode: true})
	if err != nil {
		t.Fatalf("fetch of a stored non-UTF-8 header key: %v", err)
	}
	if k := f.Records[0].Headers[0].Key; k != "k\uFFFD" {
		t.Fatalf("header key %q", k)
	}
}
