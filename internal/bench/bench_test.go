package bench

import (
	"context"
	"testing"
	"time"

	"github.com/logd/logd/internal/node/nodetest"
)

func TestProduceThenConsume(t *testing.T) {
	s := nodetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := Options{Server: s.Addr(), Topic: "b", Records: 3000, RecordSize: 50, Keys: 10, Partitions: 3, Producers: 2}
	p, err := Produce(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Records != 3000 || p.Bytes != 3000*50 || p.Errors != 0 || p.RecordsPerSec <= 0 || p.Latency.P50 <= 0 || p.Latency.P999 < p.Latency.P50 {
		t.Fatalf("produce: %+v", p)
	}
	c, err := Consume(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Records != 3000 || c.Bytes != 3000*50 {
		t.Fatalf("consume: %+v", c)
	}
}

func TestE2E(t *testing.T) {
	s := nodetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := E2E(ctx, Options{Server: s.Addr(), Topic: "e", Records: 500, RecordSize: 64, Rate: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Records != 500 || r.Latency.P50 <= 0 {
		t.Fatalf("e2e: %+v", r)
	}
}
