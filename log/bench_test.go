package log

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
)

// benchDir is where benchmarks write: LOGD_BENCH_DIR, or a temporary
// directory (put it on the disk being measured).
func benchDir(b *testing.B) string {
	if d := os.Getenv("LOGD_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "logbench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

func benchBatch(records, valueSize int) []byte {
	recs := make([]batch.Record, records)
	for i := range recs {
		recs[i] = batch.Record{Timestamp: 1, Value: make([]byte, valueSize)}
	}
	return batch.Encode(nil, 0, batch.NoProducer, recs)
}

// BenchmarkAppend: FsyncAlways appends of batches of 1, 16 and 256 records
// of 100 B and 1 KiB, from 1 and 8 concurrent appenders. MB/s counts batch
// bytes; disk-bytes/byte is what the log wrote (segments and indexes) per
// batch byte.
func BenchmarkAppend(b *testing.B) {
	for _, mode := range []FsyncMode{FsyncAlways, FsyncNever} {
		for _, size := range []int{100, 1024} {
			for _, n := range []int{1, 16, 256} {
				for _, writers := range []int{1, 8} {
					if mode == FsyncNever && (writers != 1 || n != 16) {
						continue
					}
					name := fmt.Sprintf("fsync=%s/record=%dB/batch=%d/writers=%d", FsyncPolicy{Mode: mode}, size, n, writers)
					b.Run(name, func(b *testing.B) { benchAppend(b, mode, size, n, writers) })
				}
			}
		}
	}
}

func benchAppend(b *testing.B, mode FsyncMode, size, n, writers int) {
	var written, syncs atomic.Int64
	opts := Options{Fsync: FsyncPolicy{Mode: mode}, Hooks: Hooks{
		Written: func(n int) { written.Add(int64(n)) },
		Fsync:   func(time.Duration) { syncs.Add(1) },
	}}
	l, err := Open(benchDir(b), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	bufs := make([][]byte, writers)
	for i := range bufs {
		bufs[i] = benchBatch(n, size)
	}
	b.SetBytes(int64(len(bufs[0])))
	b.ResetTimer()
	written.Store(0)
	syncs.Store(0)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := l.Append(bufs[w]); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/float64(max(syncs.Load(), 1)), "appends/fsync")
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(written.Load())/float64(b.N*len(bufs[0])), "disk-bytes/byte")
}

// BenchmarkRead reads a 64 MiB log sequentially with 1 MiB reads.
func BenchmarkRead(b *testing.B) {
	l, err := Open(benchDir(b), Options{Fsync: FsyncPolicy{Mode: FsyncNever}, SegmentBytes: 16 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	buf := benchBatch(16, 1024)
	for l.Size() < 64<<20 {
		if _, err := l.Append(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var bytes int64
	off := int64(0)
	for i := 0; i < b.N; i++ {
		out, err := l.Read(off, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		bytes += int64(len(out))
		off += int64(len(out)/len(buf)) * 16
		if off >= l.HighWatermark() {
			off = 0
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(bytes)/1e6/b.Elapsed().Seconds(), "MB/s")
}

// BenchmarkReadInto is BenchmarkRead through one reused buffer, as the
// server's Subscribe reads.
func BenchmarkReadInto(b *testing.B) {
	l, err := Open(benchDir(b), Options{Fsync: FsyncPolicy{Mode: FsyncNever}, SegmentBytes: 16 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	buf := benchBatch(16, 1024)
	for l.Size() < 64<<20 {
		if _, err := l.Append(buf); err != nil {
			b.Fatal(err)
		}
	}
	dst := make([]byte, 1<<20+ReadBufferSlack)
	b.ResetTimer()
	var bytes int64
	off := int64(0)
	for i := 0; i < b.N; i++ {
		out, err := l.ReadInto(dst, off, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		bytes += int64(len(out))
		off += int64(len(out)/len(buf)) * 16
		if off >= l.HighWatermark() {
			off = 0
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(bytes)/1e6/b.Elapsed().Seconds(), "MB/s")
}
