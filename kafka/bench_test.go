package kafka

import (
	"bytes"
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkKgoProduce is a franz-go idempotent producer (acks=all, no
// compression, linger 0) through the listener into a real node: one op is
// one record of 100 bytes.
func BenchmarkKgoProduce(b *testing.B) {
	n := startNodeTB(b)
	n.createTopicTB(b, "bench", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.DefaultProduceTopic("bench"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	value := bytes.Repeat([]byte("x"), 100)
	ctx := context.Background()
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}
