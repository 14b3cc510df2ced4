package kafka

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
)

// A kgo producer with its default compression (snappy) and with gzip, lz4
// and zstd writes to logd; the batches are stored as sent (still
// compressed), logd's decoder reads the records from them, and a kgo
// consumer reads the same records.
func TestCompressedProduceConsume(t *testing.T) {
	n := startNode(t)
	ctx := testCtx(t)
	codecs := []struct {
		name  string
		codec int16
		opts  []kgo.Opt
	}{
		{"default", batch.CodecSnappy, nil},
		{"gzip", batch.CodecGzip, []kgo.Opt{kgo.ProducerBatchCompression(kgo.GzipCompression())}},
		{"lz4", batch.CodecLz4, []kgo.Opt{kgo.ProducerBatchCompression(kgo.Lz4Compression())}},
		{"zstd", batch.CodecZstd, []kgo.Opt{kgo.ProducerBatchCompression(kgo.ZstdCompression())}},
	}
	for _, c := range codecs {
		topic := "c-" + c.name
		n.createTopic(t, topic, 1)
		opts := append([]kgo.Opt{kgo.SeedBrokers(n.addr), kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0)}, c.opts...)
		prod, err := kgo.NewClient(opts...) // newClient would turn compression off
		if err != nil {
			t.Fatal(err)
		}
		var want []*kgo.Record
		for i := range 20 {
			want = append(want, &kgo.Record{Key: []byte(fmt.Sprint("k", i%3)),
				Value:   bytes.Repeat([]byte(fmt.Sprint(c.name, i, " ")), 20),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}}})
		}
		err = prod.ProduceSync(ctx, want...).FirstErr()
		prod.Close()
		if err != nil {
			t.Fatalf("%s: produce: %v", c.name, err)
		}
		// Stored as sent: compressed with the producer's codec, CRC intact.
		res, err := n.core.Fetch(ctx, broker.FetchRequest{Partitions: []broker.FetchPartition{{Topic: topic}}, Decode: true})
		if err != nil {
			t.Fatal(err)
		}
		var logd []batch.Record
		err = batch.Split(res.Partitions[0].Batches, func(b []byte, info batch.Info) error {
			if info.Attributes&batch.AttrCompressionMask != c.codec {
				return fmt.Errorf("stored batch has attributes %#x, want codec %d", info.Attributes, c.codec)
			}
			_, recs, err := batch.Decode(b, 0)
			logd = append(logd, recs...)
			return err
		})
		res.Release()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		cons := newClient(t, n.addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []*kgo.Record
		for len(got) < len(want) && ctx.Err() == nil {
			f := cons.PollFetches(ctx)
			if errs := f.Errors(); len(errs) > 0 {
				t.Fatalf("%s: kgo consume: %v", c.name, errs)
			}
			got = append(got, f.Records()...)
		}
		if len(logd) != len(want) || len(got) != len(want) {
			t.Fatalf("%s: logd decoded %d records, kgo consumed %d, produced %d", c.name, len(logd), len(got), len(want))
		}
		for i, w := range want {
			l, k := logd[i], got[i]
			if l.Offset != int64(i) || k.Offset != int64(i) || !bytes.Equal(l.Key, w.Key) || !bytes.Equal(k.Key, w.Key) ||
				!bytes.Equal(l.Value, w.Value) || !bytes.Equal(k.Value, w.Value) ||
				len(l.Headers) != 1 || string(l.Headers[0].Value) != fmt.Sprint(i) || l.Timestamp != k.Timestamp.UnixMilli() {
				t.Fatalf("%s: record %d: logd %+v, kgo %+v, produced %+v", c.name, i, l, k, w)
			}
		}
	}
}

// A compressed batch whose payload is corrupt, or decompresses to fewer
// records than its header counts, is refused with CORRUPT_MESSAGE and
// nothing is stored; an unknown codec is UNSUPPORTED_COMPRESSION_TYPE.
func TestCorruptCompressedBatchRefused(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "z", 1)
	ctx := testCtx(t)
	cl := newClient(t, n.addr)
	recs := []batch.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}}
	plain := batch.Encode(nil, 0, batch.NoProducer, recs)
	two := batch.Encode(nil, 0, batch.NoProducer, recs[:2])
	comp, err := kgo.DefaultCompressor(kgo.ZstdCompression())
	if err != nil {
		t.Fatal(err)
	}
	frame := func(codec int16, payload []byte) []byte {
		b := append(bytes.Clone(plain[:batch.HeaderSize]), payload...)
		binary.BigEndian.PutUint16(b[21:], uint16(codec))
		binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
		binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
		return b
	}
	zstd := func(src []byte) []byte {
		out, _ := comp.Compress(new(bytes.Buffer), src)
		return bytes.Clone(out)
	}
	cases := []struct {
		name string
		b    []byte
		code int16
	}{
		{"not zstd", frame(batch.CodecZstd, []byte("definitely not a zstd frame")), kerr.CorruptMessage.Code},
		{"2 records under a count of 3", frame(batch.CodecZstd, zstd(two[batch.HeaderSize:])), kerr.CorruptMessage.Code},
		{"snappy garbage", frame(batch.CodecSnappy, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2}), kerr.CorruptMessage.Code},
		{"codec 6", frame(6, plain[batch.HeaderSize:]), kerr.UnsupportedCompressionType.Code},
	}
	if _, err := batch.Validate(frame(batch.CodecZstd, zstd(plain[batch.HeaderSize:]))); err != nil {
		t.Fatalf("the well-formed zstd batch: %v", err)
	}
	for _, c := range cases {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "z"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = c.b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != c.code {
			t.Errorf("%s: code %d, want %d", c.name, code, c.code)
		}
	}
	end, err := kadm.NewClient(cl).ListEndOffsets(ctx, "z")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("z", 0); o.Offset != 0 {
		t.Fatalf("end offset %d after refused batches", o.Offset)
	}
}
