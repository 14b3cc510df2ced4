// Command kgotxn measures what transactions cost through logd's Kafka
// listener with franz-go, in one run so the ratios compare like with like
// (bench/txn.sh, make bench-txn):
//
//	kgotxn -b HOST:PORT -records N -size S
//
// It produces N records of S bytes to a 3-partition topic each way: one
// idempotent producer (acks all, no compression, linger 0), then one
// transactional producer committing a transaction every 100 records, then
// every 10,000 (each transaction flushed, then committed). It then reads
// the 100-record transactions' topic from the start with a consumer (no
// group) once untimed, then at read_uncommitted and at read_committed. It prints a Markdown
// table: records/s, MiB/s and the ratio to the run each compares with.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	broker := flag.String("b", "127.0.0.1:9092", "Kafka bootstrap addresses, comma-separated")
	records := flag.Int("records", 100_000, "records per run")
	size := flag.Int("size", 1024, "record value size in bytes")
	timeout := flag.Duration("timeout", 15*time.Minute, "give up after")
	flag.Parse()
	if *records <= 0 || *size < 0 {
		fmt.Fprintln(os.Stderr, "kgotxn: -records must be positive and -size not negative")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, strings.Split(*broker, ","), *records, *size); err != nil {
		fmt.Fprintln(os.Stderr, "kgotxn:", err)
		os.Exit(1)
	}
}

// result is one measured run.
type result struct {
	name, vs string
	secs     float64
}

func run(ctx context.Context, seeds []string, n, size int) error {
	stamp := time.Now().UnixNano()
	topic := func(s string) string { return fmt.Sprintf("txnbench-%s-%d", s, stamp) }
	if err := createTopics(ctx, seeds, topic("plain"), topic("t100"), topic("t10000")); err != nil {
		return err
	}
	value := make([]byte, size)
	var res []result
	timed := func(name, vs string, f func() error) error {
		start := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if name != "" {
			res = append(res, result{name, vs, time.Since(start).Seconds()})
		}
		return nil
	}
	steps := []struct {
		name, vs string
		f        func() error
	}{
		{"idempotent produce", "", func() error { return produce(ctx, seeds, topic("plain"), n, 0, value) }},
		{"transactional produce, 100 records a transaction", "idempotent produce",
			func() error { return produce(ctx, seeds, topic("t100"), n, 100, value) }},
		{"transactional produce, 10,000 records a transaction", "idempotent produce",
			func() error { return produce(ctx, seeds, topic("t10000"), n, 10_000, value) }},
		// An untimed read first, so that both timed ones find the
		// segments in the page cache.
		{"", "", func() error { return consume(ctx, seeds, topic("t100"), n, kgo.ReadUncommitted()) }},
		{"consume read_uncommitted", "", func() error { return consume(ctx, seeds, topic("t100"), n, kgo.ReadUncommitted()) }},
		{"consume read_committed", "consume read_uncommitted",
			func() error { return consume(ctx, seeds, topic("t100"), n, kgo.ReadCommitted()) }},
	}
	for _, s := range steps {
		if err := timed(s.name, s.vs, s.f); err != nil {
			return err
		}
	}
	printTable(res, n, size)
	return nil
}

func createTopics(ctx context.Context, seeds []string, topics ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, 3, -1, nil, topics...)
	if err != nil {
		return err
	}
	return resp.Error()
}

// produce appends n records to topic: idempotently when per is 0, else
// in transactions of per records.
func produce(ctx context.Context, seeds []string, topic string, n, per int, value []byte) error {
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0)}
	if per > 0 {
		opts = append(opts, kgo.TransactionalID(topic))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var failed error
	cb := func(_ *kgo.Record, err error) {
		if err != nil && failed == nil {
			failed = err
		}
	}
	for i := 0; i < n; {
		if per > 0 {
			if err := cl.BeginTransaction(); err != nil {
				return err
			}
		}
		end := n
		if per > 0 {
			end = min(n, i+per)
		}
		for ; i < end; i++ {
			cl.Produce(ctx, &kgo.Record{Value: value}, cb)
		}
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		if per > 0 {
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				return err
			}
		}
	}
	return failed
}

// consume reads n records of topic from the start at the isolation level.
func consume(ctx context.Context, seeds []string, topic string, n int, iso kgo.IsolationLevel) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso))
	if err != nil {
		return err
	}
	defer cl.Close()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("read %d of %d records: %w", got, n, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			return ferr
		}
		got += fs.NumRecords()
	}
	return nil
}

func printTable(res []result, n, size int) {
	secs := map[string]float64{}
	fmt.Printf("| run (%d records of %d B) | records/s | MiB/s | ratio |\n|---|---:|---:|---|\n", n, size)
	for _, r := range res {
		secs[r.name] = r.secs
		ratio := "1"
		if r.vs != "" {
			ratio = fmt.Sprintf("%.2f × %s", secs[r.vs]/r.secs, r.vs)
		}
		fmt.Printf("| %s | %.0f | %.1f | %s |\n", r.name, float64(n)/r.secs, float64(n)*float64(size)/r.secs/(1<<20), ratio)
	}
}
