package replication_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/clustertest"
)

// BenchmarkAppendAcksAll measures acks=all appends of 10-record batches of
// 100-byte values from 16 concurrent producers, on 1 and 3 nodes (fsync
// always, loopback). Compare the two: the 3-node cost is a quorum round trip
// and a follower fsync per Raft batch.
func BenchmarkAppendAcksAll(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			c := clustertest.New(b, clustertest.Options{Nodes: nodes, Groups: []string{group}})
			recs := make([]batch.Record, 10)
			for i := range recs {
				recs[i] = batch.Record{Key: []byte("k"), Value: make([]byte, 100)}
			}
			proto := batch.Encode(nil, 0, batch.NoProducer, recs)
			p := c.Leader(group).Replica(group)
			b.SetBytes(int64(len(proto)))
			b.ResetTimer()
			start := time.Now()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if _, err := p.Append(context.Background(), append([]byte(nil), proto...)); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N*len(recs))/time.Since(start).Seconds(), "records/s")
		})
	}
}

// BenchmarkOneProducerWindow measures one producer's 1 MiB batches (1 KiB
// records) on 3 nodes, acks=all: window=1 appends them one at a time (as
// the server did before pipelining), window=4 keeps 4 started (Start) and
// waits for the oldest, as a client's pipeline to one partition does.
func BenchmarkOneProducerWindow(b *testing.B) {
	for _, window := range []int{1, 4} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) {
			c := clustertest.New(b, clustertest.Options{Nodes: 3, Groups: []string{group}})
			recs := make([]batch.Record, 1000)
			for i := range recs {
				recs[i] = batch.Record{Key: []byte("k"), Value: make([]byte, 1000)}
			}
			proto := batch.Encode(nil, 0, batch.NoProducer, recs)
			p := c.Leader(group).Replica(group)
			b.SetBytes(int64(len(proto)))
			b.ResetTimer()
			var inflight []*replication.Write
			for range b.N {
				if len(inflight) == window {
					if _, err := inflight[0].Wait(context.Background()); err != nil {
						b.Fatal(err)
					}
					inflight = inflight[1:]
				}
				// Validated as a produce does, once, before Start.
				checked, err := batch.Validate(append([]byte(nil), proto...))
				if err != nil {
					b.Fatal(err)
				}
				w, err := p.Start(checked, false, nil)
				if err != nil {
					b.Fatal(err)
				}
				inflight = append(inflight, w)
			}
			for _, w := range inflight {
				if _, err := w.Wait(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
