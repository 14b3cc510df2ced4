package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc/codes"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// compressed re-frames the uncompressed batch plain with its records
// compressed by franz-go's compressor for codec (what a Kafka producer
// sends), or replaced by payload when it is not nil.
func compressed(t *testing.T, plain []byte, codec kgo.CompressionCodec, payload []byte) []byte {
	t.Helper()
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		t.Fatal(err)
	}
	out, typ := comp.Compress(new(bytes.Buffer), plain[batch.HeaderSize:])
	if payload != nil {
		out = payload
	}
	b := append(bytes.Clone(plain[:batch.HeaderSize]), out...)
	binary.BigEndian.PutUint16(b[21:], uint16(typ))
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	return b
}

var codecs = []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}

func sampleRecords() []batch.Record {
	var recs []batch.Record
	for i := range 5 {
		recs = append(recs, batch.Record{Timestamp: 1000 + int64(i), Key: []byte("k"), Value: []byte(fmt.Sprint("value ", i, " value value"))})
	}
	return recs
}

// TestCorruptCompressedBatchRefused: a compressed batch whose payload is
// corrupt, or holds fewer records than its header counts, is refused
// INVALID_ARGUMENT and nothing is stored.
func TestCorruptCompressedBatchRefused(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "t", 1)
	p0 := int32(0)
	recs := sampleRecords()
	plain := batch.Encode(nil, 0, batch.NoProducer, recs)
	two := batch.Encode(nil, 0, batch.NoProducer, recs[:2])
	for _, codec := range codecs {
		for _, bad := range [][]byte{[]byte("not compressed at all"), compressed(t, two, codec, nil)[batch.HeaderSize:]} {
			_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p0, Batch: compressed(t, plain, codec, bad)})
			wantCode(t, err, codes.InvalidArgument)
		}
	}
	f, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Offset: 0})
	if err != nil || f.HighWatermark != 0 {
		t.Fatalf("after refused batches: high watermark %d, %v", f.GetHighWatermark(), err)
	}
}

// TestCompressedBatches: compressed batches produced through the API are
// stored as sent and read back decoded by Fetch and by the Go client's
// consumer.
func TestCompressedBatches(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "t", 1)
	p0 := int32(0)
	recs := sampleRecords()
	plain := batch.Encode(nil, 0, batch.NoProducer, recs)
	var sent [][]byte
	for _, codec := range codecs {
		b := compressed(t, plain, codec, nil)
		sent = append(sent, b)
		if _, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p0, Batch: b}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Offset: 0, Decode: true, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Records) != 5*len(codecs) {
		t.Fatalf("fetch decoded %d records, want %d", len(f.Records), 5*len(codecs))
	}
	i := 0
	err = batch.Split(f.Batches, func(b []byte, info batch.Info) error {
		// Stored as sent: the same bytes but the base offset and epoch.
		if !bytes.Equal(b[21:], sent[i][21:]) {
			return fmt.Errorf("batch %d is not stored as sent", i)
		}
		i++
		return nil
	})
	if err != nil || i != len(codecs) {
		t.Fatalf("%d batches fetched: %v", i, err)
	}
	for j, r := range f.Records {
		if r.Offset != int64(j) || string(r.Value) != string(recs[j%5].Value) {
			t.Fatalf("fetched record %d: offset %d value %q", j, r.Offset, r.Value)
		}
	}
	cl, err := client.Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cons, err := cl.NewConsumer(ctx(t), client.ConsumerOptions{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var got []client.ConsumedRecord
	for {
		rs, err := cons.Poll(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rs...)
	}
	if len(got) != len(f.Records) {
		t.Fatalf("the Go client consumed %d records, want %d", len(got), len(f.Records))
	}
	for j, r := range got {
		if r.Offset != int64(j) || string(r.Key) != "k" || string(r.Value) != string(recs[j%5].Value) || r.Timestamp.UnixMilli() != recs[j%5].Timestamp {
			t.Fatalf("consumed record %d: %+v", j, r)
		}
	}
}
