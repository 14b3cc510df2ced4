package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/client"
)

// Options of a run. Zero values take the defaults of `logd bench`.
type Options struct {
	Server     string
	Topic      string
	Records    int
	RecordSize int
	Keys       int
	Partitions int
	Producers  int
	Acks       client.Acks
	Rate       int           // offered records/s over all producers; 0: unlimited
	Linger     time.Duration // producer linger; 0: the client's default
	Progress   io.Writer     // progress bar target (stderr); nil: none
}

func (o *Options) defaults() {
	if o.Topic == "" {
		o.Topic = "bench"
	}
	if o.Records <= 0 {
		o.Records = 100_000
	}
	if o.RecordSize <= 0 {
		o.RecordSize = 100
	}
	if o.Partitions <= 0 {
		o.Partitions = 1
	}
	if o.Producers <= 0 {
		o.Producers = 1
	}
}

// Result is a run's summary; its JSON form is the last line of
// `logd bench --json`.
type Result struct {
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
	Latency       Latency `json:"latency_ms"`
	Errors        int64   `json:"errors,omitempty"`
}

// Latency percentiles in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

func (r Result) String() string {
	s := fmt.Sprintf("%d records, %.1f MB in %.2fs: %.0f records/s, %.1f MB/s; latency p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms",
		r.Records, float64(r.Bytes)/1e6, r.Seconds, r.RecordsPerSec, r.MBPerSec, r.Latency.P50, r.Latency.P99, r.Latency.P999)
	if r.Errors > 0 {
		s += fmt.Sprintf("; %d errors", r.Errors)
	}
	return s
}

func summarize(records, bytes int64, elapsed time.Duration, lat []time.Duration, errs int64) Result {
	r := Result{Records: records, Bytes: bytes, Seconds: elapsed.Seconds(), Errors: errs}
	if r.Seconds > 0 {
		r.RecordsPerSec = float64(records) / r.Seconds
		r.MBPerSec = float64(bytes) / 1e6 / r.Seconds
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		q := func(p float64) float64 {
			i := min(int(p*float64(len(lat))), len(lat)-1)
			return float64(lat[i].Microseconds()) / 1000
		}
		r.Latency = Latency{P50: q(0.50), P99: q(0.99), P999: q(0.999)}
	}
	return r
}

// ensureTopic creates the topic unless it exists.
func ensureTopic(ctx context.Context, c *client.Client, o Options) error {
	_, err := c.Admin().CreateTopic(ctx, o.Topic, client.TopicOptions{Partitions: int32(o.Partitions)})
	if err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("create topic %q: %w", o.Topic, err)
	}
	return nil
}

// Produce runs the produce benchmark.
func Produce(ctx context.Context, o Options) (Result, error) {
	o.defaults()
	return produce(ctx, o, nil)
}

// produce appends o.Records records; stamp, when set, makes each value
// start with its send time (e2e).
func produce(ctx context.Context, o Options, stamp *atomic.Bool) (Result, error) {
	admin, err := client.Dial(o.Server)
	if err != nil {
		return Result{}, err
	}
	defer admin.Close()
	if err := ensureTopic(ctx, admin, o); err != nil {
		return Result{}, err
	}
	r := newProduceRun(o, stamp)
	defer r.bar.stop()
	var wg sync.WaitGroup
	start := time.Now()
	for w := range o.Producers {
		n := o.Records / o.Producers
		if w < o.Records%o.Producers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.lats[w] = r.producer(ctx, w, n)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range r.lats {
		all = append(all, l...)
	}
	res := summarize(r.acked.Load(), r.acked.Load()*int64(o.RecordSize), elapsed, all, r.errs.Load())
	if res.Records == 0 && r.firstErr != nil {
		return res, r.firstErr
	}
	return res, nil
}

// produceRun is one produce benchmark: what its producers send and what
// they measure.
type produceRun struct {
	o     Options
	stamp *atomic.Bool
	keys  [][]byte
	value []byte
	bar   *progress

	acked, errs atomic.Int64
	lats        [][]time.Duration // per producer, written as it ends
	errOnce     sync.Once
	firstErr    error
}

func newProduceRun(o Options, stamp *atomic.Bool) *produceRun {
	r := &produceRun{o: o, stamp: stamp, keys: make([][]byte, o.Keys), value: make([]byte, o.RecordSize),
		lats: make([][]time.Duration, o.Producers)}
	for i := range r.keys {
		r.keys[i] = fmt.Appendf(nil, "key-%d", i)
	}
	for i := range r.value {
		r.value[i] = byte('a' + rand.IntN(26))
	}
	r.bar = newProgress(o.Progress, "produce", int64(o.Records))
	return r
}

func (r *produceRun) fail(err error) { r.errOnce.Do(func() { r.firstErr = err }) }

// producer is producer w of the run: its own connection and Producer,
// sending n records (paced when o.Rate is set). It returns the latency of
// each acknowledged record, from its send time (its scheduled time when
// paced, so a server that falls behind is charged for the wait).
func (r *produceRun) producer(ctx context.Context, w, n int) []time.Duration {
	o := r.o
	c, err := client.Dial(o.Server)
	if err != nil {
		r.fail(err)
		return nil
	}
	defer c.Close()
	p := c.NewProducer(client.ProducerOptions{Acks: o.Acks, Linger: o.Linger})
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	var interval time.Duration
	if o.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(o.Producers) / float64(o.Rate))
	}
	t0 := time.Now()
	for i := range n {
		sent := time.Now()
		if interval > 0 {
			sent = t0.Add(time.Duration(i) * interval)
			if d := time.Until(sent); d > 0 {
				time.Sleep(d)
			}
		}
		p.ProduceFunc(ctx, r.record(w, i), func(_ client.Ack, err error) {
			if err != nil {
				r.errs.Add(1)
				r.fail(err)
				return
			}
			d := time.Since(sent)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
			r.bar.add(1)
			r.acked.Add(1)
		})
	}
	if err := p.Close(); err != nil {
		r.fail(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return lat
}

// record is producer w's i-th record: the run's value (or, stamped, one
// starting with the time now) under the next key of the producer's share.
func (r *produceRun) record(w, i int) client.Record {
	rec := client.Record{Topic: r.o.Topic, Value: r.value}
	if r.stamp != nil {
		v := make([]byte, max(r.o.RecordSize, 8))
		binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
		rec.Value = v
	}
	if len(r.keys) > 0 {
		rec.Key = r.keys[(w+i*r.o.Producers)%len(r.keys)]
	}
	return rec
}

// Consume reads the topic from the earliest offset to the high watermark
// found at start (at most o.Records records when set).
func Consume(ctx context.Context, o Options) (Result, error) {
	o.defaults()
	c, err := client.Dial(o.Server)
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: o.Topic, Start: client.Earliest(), MaxBytes: 4 << 20})
	if err != nil {
		return Result{}, err
	}
	defer cons.Close()
	total := int64(0)
	for _, p := range cons.Partitions() {
		end, _ := cons.End(p)
		pos, _ := cons.Position(p)
		total += end - pos
	}
	bar := newProgress(o.Progress, "consume", total)
	defer bar.stop()
	var n, bytes int64
	var lat []time.Duration
	start := time.Now()
	for {
		t := time.Now()
		recs, err := cons.Poll(ctx)
		lat = append(lat, time.Since(t))
		for _, r := range recs {
			bytes += int64(len(r.Value))
		}
		n += int64(len(recs))
		bar.add(int64(len(recs)))
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return summarize(n, bytes, time.Since(start), lat, 1), err
		}
	}
	return summarize(n, bytes, time.Since(start), lat, 0), nil
}

// E2E produces while a consumer tails the topic, and measures each record's
// time from send to consume.
func E2E(ctx context.Context, o Options) (Result, error) {
	o.defaults()
	o.RecordSize = max(o.RecordSize, 8)
	c, err := client.Dial(o.Server)
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	if err := ensureTopic(ctx, c, o); err != nil {
		return Result{}, err
	}
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: o.Topic, Start: client.Latest(), Follow: true, MaxWait: 100 * time.Millisecond})
	if err != nil {
		return Result{}, err
	}
	defer cons.Close()
	type out struct {
		res Result
		err error
	}
	prodDone := make(chan out, 1)
	var stamp atomic.Bool
	stamp.Store(true)
	po := o
	po.Progress = nil
	go func() {
		r, err := produce(ctx, po, &stamp)
		prodDone <- out{r, err}
	}()
	bar := newProgress(o.Progress, "e2e", int64(o.Records))
	defer bar.stop()
	var n, bytes int64
	lat := make([]time.Duration, 0, o.Records)
	start := time.Now()
	var produced *out
	for n < int64(o.Records) {
		if produced != nil && produced.err != nil {
			return Result{}, produced.err
		}
		recs, err := cons.Poll(ctx)
		now := time.Now().UnixNano()
		for _, r := range recs {
			if len(r.Value) >= 8 {
				lat = append(lat, time.Duration(now-int64(binary.BigEndian.Uint64(r.Value))))
			}
			bytes += int64(len(r.Value))
		}
		n += int64(len(recs))
		bar.add(int64(len(recs)))
		if err != nil {
			return summarize(n, bytes, time.Since(start), lat, 1), err
		}
		select {
		case p := <-prodDone:
			produced = &p
			if p.res.Records < int64(o.Records) {
				// Some records failed: consume only what was acknowledged.
				o.Records = int(p.res.Records)
			}
		default:
		}
	}
	if produced == nil {
		p := <-prodDone
		produced = &p
	}
	r := summarize(n, bytes, time.Since(start), lat, produced.res.Errors)
	return r, produced.err
}
