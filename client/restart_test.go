package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
)

// The server restarts while records are in flight: the producer retries
// until it is back, every record is acknowledged, and none is stored twice.
func TestServerRestartDuringProduce(t *testing.T) {
	dir := t.TempDir()
	cfg := node.Config{Config: broker.Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)}, Addr: "127.0.0.1:0"}
	s, err := node.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = s.Addr()
	c, err := client.Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "t", client.TopicOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{Linger: time.Millisecond, MaxBatchBytes: 2048, RetryBackoff: 20 * time.Millisecond})
	const n = 3000
	futures := make([]*client.Future, 0, n)
	for i := range n {
		futures = append(futures, p.Produce(ctx, client.Record{Topic: "t", Key: []byte(fmt.Sprint(i % 10)), Value: []byte(fmt.Sprint(i))}))
		if i == n/3 {
			if _, err := futures[i/2].Get(ctx); err != nil {
				t.Fatal(err)
			}
			s.Close()
			go func() {
				time.Sleep(300 * time.Millisecond)
				s2, err := node.Start(cfg)
				if err != nil {
					t.Error(err)
					return
				}
				t.Cleanup(func() { s2.Close() })
			}()
		}
	}
	for i, f := range futures {
		if _, err := f.Get(ctx); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	p.Close()
	recs := readAll(t, c, client.ConsumerOptions{Topic: "t"})
	seen := map[string]bool{}
	last := map[string]int{}
	for _, r := range recs {
		if seen[string(r.Value)] {
			t.Fatalf("record %s stored twice", r.Value)
		}
		seen[string(r.Value)] = true
		var v int
		fmt.Sscan(string(r.Value), &v)
		if prev, ok := last[string(r.Key)]; ok && v <= prev {
			t.Fatalf("key %s: %d after %d", r.Key, v, prev)
		}
		last[string(r.Key)] = v
	}
	if len(recs) != n {
		t.Fatalf("%d records stored, want %d", len(recs), n)
	}
}
