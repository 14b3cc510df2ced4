package log

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
)

// The cleaner's benchmarks: how fast a compaction goes and what it
// reclaims, and what a compaction running costs the appends of another
// partition on the same disk. A partition is LOGD_BENCH_COMPACT_MB MiB
// (default 256; 1024 is the 1 GiB of docs/performance.md) of 1 KiB values
// over 10,000 keys, drawn at random, in 16 MiB segments.

const (
	compactBenchKeys      = 10_000
	compactBenchValue     = 1 << 10
	compactBenchSegment   = 16 << 20
	defaultCompactBenchMB = 256
	// cleanerBenchRate is the broker's default cleaner I/O bound
	// (broker.DefaultCleanerBytesPerSecond), which the cleaner runs
	// with unless configured otherwise.
	cleanerBenchRate = 64 << 20
)

// compactBenchBytes is the partition size the benchmarks fill.
func compactBenchBytes(b *testing.B) int64 {
	mb := defaultCompactBenchMB
	if s := os.Getenv("LOGD_BENCH_COMPACT_MB"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("LOGD_BENCH_COMPACT_MB=%q: want a size in MiB", s)
		}
		mb = v
	}
	return int64(mb) << 20
}

// fillCompactBench opens a log in a new directory and appends about size
// bytes of batches of perBatch records (keys at random among
// compactBenchKeys, timestamps now), without fsync; it returns the log
// and the bytes appended.
func fillCompactBench(b *testing.B, size int64, perBatch int, seed uint64) (*Log, int64) {
	l, err := Open(benchDir(b), Options{SegmentBytes: compactBenchSegment, Fsync: FsyncPolicy{Mode: FsyncNever}})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	value := make([]byte, compactBenchValue)
	recs := make([]batch.Record, perBatch)
	var buf []byte
	var n int64
	for n < size {
		ts := time.Now().UnixMilli()
		for i := range recs {
			recs[i] = batch.Record{Timestamp: ts, Key: fmt.Appendf(recs[i].Key[:0], "key-%05d", rng.IntN(compactBenchKeys)), Value: value}
		}
		buf = batch.Encode(buf[:0], 0, batch.NoProducer, recs)
		if _, err := l.Append(slices.Clone(buf)); err != nil {
			b.Fatal(err)
		}
		n += int64(len(buf))
	}
	return l, n
}

// BenchmarkCompact: one Compact of a freshly filled partition per op, with
// no I/O bound, batches of 1 and of 16 records. MB/s is the partition's
// bytes over the compaction's time; reclaimed-MB/op and reclaimed-% what
// it removed (of the whole partition; the active segment is never
// touched).
func BenchmarkCompact(b *testing.B) {
	size := compactBenchBytes(b)
	for _, perBatch := range []int{1, 16} {
		b.Run(fmt.Sprintf("MB=%d/keys=%d/batch=%d", size>>20, compactBenchKeys, perBatch), func(b *testing.B) {
			var reclaimed, filled int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				l, n := fillCompactBench(b, size, perBatch, uint64(i))
				b.SetBytes(n)
				b.StartTimer()
				res, err := l.Compact(CompactOptions{Below: l.HighWatermark()})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if res.Segments == 0 {
					b.Fatalf("nothing compacted: %+v", res)
				}
				reclaimed += res.Reclaimed
				filled += n
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(reclaimed)/float64(b.N)/(1<<20), "reclaimed-MB/op")
			b.ReportMetric(100*float64(reclaimed)/float64(filled), "reclaimed-%")
		})
	}
}

// BenchmarkAppendWhileCompacting: the latency of durable appends
// (FsyncAlways, one 1 KiB record a batch, 500 a second, as a producer's
// partition on the same node) with no compaction running, and while
// another partition of the same disk is compacted at the cleaner's default
// I/O bound (64 MiB/s). Both fill that partition first. Each op is one
// window of max(b.N, 2000) appends; p50-us and p99-us are their latencies.
// cleaner-busy is 1 when the compaction was still running at the end of
// the window (the whole window was measured against it).
func BenchmarkAppendWhileCompacting(b *testing.B) {
	size := compactBenchBytes(b)
	for _, cleaner := range []bool{false, true} {
		b.Run(fmt.Sprintf("cleaner=%v", cleaner), func(b *testing.B) {
			dirty, _ := fillCompactBench(b, size, 16, 7)
			defer dirty.Close()
			l, err := Open(benchDir(b), Options{Fsync: FsyncPolicy{Mode: FsyncAlways}})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			busy := make(chan struct{})
			if cleaner {
				wg.Go(func() {
					defer close(busy)
					dirty.Compact(CompactOptions{Below: dirty.HighWatermark(), BytesPerSecond: cleanerBenchRate, Context: ctx})
				})
			}
			lat := appendWindow(b, l, max(b.N, 2000), 500)
			stillBusy := 0.0
			select {
			case <-busy:
			default:
				if cleaner {
					stillBusy = 1
				}
			}
			cancel()
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
			b.ReportMetric(stillBusy, "cleaner-busy")
		})
	}
}

// appendWindow appends n one-record batches of 1 KiB to l at rate a
// second and returns each append's latency.
func appendWindow(b *testing.B, l *Log, n, rate int) []time.Duration {
	buf := benchBatch(1, compactBenchValue)
	lat := make([]time.Duration, 0, n)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	b.ResetTimer()
	for range n {
		<-tick.C
		start := time.Now()
		if _, err := l.Append(slices.Clone(buf)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	return lat
}
