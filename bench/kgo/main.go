// Command kgo measures logd through its Kafka listener with franz-go, for
// bench/compare-jetstream.sh's "logd via Kafka protocol" rows:
//
//	kgo produce -b HOST:PORT -topic T -records N -size S
//	kgo consume -b HOST:PORT -topic T -records N
//	kgo spread -b HOST:PORT -topic T -records N
//
// produce is one idempotent franz-go producer (acks all, no compression,
// linger 0, the client's default in-flight requests) appending N records of
// S bytes, unkeyed, to an existing topic; consume is one franz-go consumer
// (no group) reading N records from the earliest offset. spread (for
// bench/partitions.sh with KAFKA=1) is the same producer sending one record
// to each of the topic's first N partitions (a manual partitioner), as a
// Kafka client meets a topic of thousands of sleeping partitions. Each
// prints one JSON line: {"records": N, "seconds": s, "records_per_sec": r}.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	runs := map[string]func(context.Context, string, string, int, int) error{"produce": produce, "consume": consume, "spread": spread}
	if len(os.Args) < 2 || runs[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: kgo produce|consume|spread -b HOST:PORT -topic T -records N [-size S]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	broker := fs.String("b", "127.0.0.1:9092", "Kafka bootstrap addresses, comma-separated")
	topic := fs.String("topic", "bench", "topic (must exist)")
	records := fs.Int("records", 100_000, "records")
	size := fs.Int("size", 100, "record value size in bytes (produce)")
	timeout := fs.Duration("timeout", 15*time.Minute, "give up after")
	fs.Parse(os.Args[2:])
	if *records <= 0 || *size < 0 {
		fmt.Fprintln(os.Stderr, "kgo: -records must be positive and -size not negative")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	run := runs[os.Args[1]]
	start := time.Now()
	if err := run(ctx, *broker, *topic, *records, *size); err != nil {
		fmt.Fprintln(os.Stderr, "kgo:", err)
		os.Exit(1)
	}
	secs := time.Since(start).Seconds()
	json.NewEncoder(os.Stdout).Encode(map[string]float64{"records": float64(*records), "seconds": secs, "records_per_sec": float64(*records) / secs})
}

func produce(ctx context.Context, broker, topic string, n, size int) error {
	return send(ctx, broker, topic, n, size, false)
}

func spread(ctx context.Context, broker, topic string, n, size int) error {
	return send(ctx, broker, topic, n, size, true)
}

// send produces n records of size bytes; toEach: record i to partition i.
func send(ctx context.Context, broker, topic string, n, size int, toEach bool) error {
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(broker, ",")...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0)}
	if toEach {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	value := bytes.Repeat([]byte("x"), size)
	var failed atomic.Pointer[error]
	for i := range n {
		r := &kgo.Record{Value: value}
		if toEach {
			r.Partition = int32(i)
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if p := failed.Load(); p != nil {
		return *p
	}
	return nil
}

func consume(ctx context.Context, broker, topic string, n, _ int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(broker, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for got := 0; got < n; {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %d of %d records: %w", got, n, err)
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = errors.Join(ferr, err) })
		if ferr != nil {
			return ferr
		}
		got += fetches.NumRecords()
	}
	return nil
}
