// Command kgoshare measures share-group consumption through logd's Kafka
// listener with franz-go against a classic consumer group, in one run so
// the ratios compare like with like (bench/share.sh, make bench-share):
//
//	kgoshare -b HOST:PORT -records N -size S -members 1,4,16
//
// It produces N records of S bytes to a one-partition topic (untimed),
// reads them once untimed (so that every timed read finds the segments in
// the page cache), then times a classic consumer group of one member
// reading all N, and a share group of each member count reading and
// accepting all N (each member polls, accepts what it got, and flushes
// its acknowledgements at the end; the time runs until every member has
// flushed). Each share group is new and reads from the start
// (share.auto.offset.reset=earliest). It prints a Markdown table:
// records/s, MiB/s and the ratio to the classic group.
//
// With -redelivery it measures instead how long a released record waits
// before it is delivered again, with the group's redelivery backoff set
// and with it off (redelivery.go):
//
//	kgoshare -b HOST:PORT -redelivery -records 500 -members 4 -releases 6 -backoff-base-ms 100 -backoff-max-ms 1600 -fetch-max-records 10
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	broker := flag.String("b", "127.0.0.1:9092", "Kafka bootstrap addresses, comma-separated")
	records := flag.Int("records", 50_000, "records per run")
	size := flag.Int("size", 1024, "record value size in bytes")
	members := flag.String("members", "1,4,16", "share group sizes, comma-separated")
	timeout := flag.Duration("timeout", 15*time.Minute, "give up after")
	redeliveryMode := flag.Bool("redelivery", false, "measure redelivery waits instead of throughput (-members is then one count)")
	releases := flag.Int("releases", 6, "-redelivery: deliveries released before the one accepted")
	baseMs := flag.Int64("backoff-base-ms", 100, "-redelivery: share.redelivery.backoff.base.ms")
	maxMs := flag.Int64("backoff-max-ms", 1600, "-redelivery: share.redelivery.backoff.max.ms")
	fetchMax := flag.Int("fetch-max-records", 10, "-redelivery: records a member acquires a fetch at most")
	flag.Parse()
	var sizes []int
	for _, s := range strings.Split(*members, ",") {
		m, err := strconv.Atoi(s)
		if err != nil || m <= 0 {
			fmt.Fprintf(os.Stderr, "kgoshare: -members: %q is not a positive count\n", s)
			os.Exit(2)
		}
		sizes = append(sizes, m)
	}
	if *records <= 0 || *size < 0 {
		fmt.Fprintln(os.Stderr, "kgoshare: -records must be positive and -size not negative")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *redeliveryMode {
		if len(sizes) != 1 || *baseMs <= 0 || *maxMs <= 0 || *fetchMax <= 0 {
			fmt.Fprintln(os.Stderr, "kgoshare: -redelivery takes one -members count and positive -backoff-base-ms, -backoff-max-ms and -fetch-max-records")
			os.Exit(2)
		}
		if err := redelivery(ctx, strings.Split(*broker, ","), *records, *size, sizes[0], *releases, *fetchMax, *baseMs, *maxMs); err != nil {
			fmt.Fprintln(os.Stderr, "kgoshare:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, strings.Split(*broker, ","), *records, *size, sizes); err != nil {
		fmt.Fprintln(os.Stderr, "kgoshare:", err)
		os.Exit(1)
	}
}

type result struct {
	name string
	secs float64
}

func run(ctx context.Context, seeds []string, n, size int, sizes []int) error {
	stamp := time.Now().UnixNano()
	topic := fmt.Sprintf("sharebench-%d", stamp)
	if err := produce(ctx, seeds, topic, n, make([]byte, size)); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	if _, err := classic(ctx, seeds, topic, fmt.Sprintf("warm-%d", stamp), n); err != nil {
		return fmt.Errorf("warm-up read: %w", err)
	}
	var res []result
	secs, err := classic(ctx, seeds, topic, fmt.Sprintf("classic-%d", stamp), n)
	if err != nil {
		return fmt.Errorf("classic group: %w", err)
	}
	res = append(res, result{"classic consumer group, 1 member", secs})
	for _, m := range sizes {
		secs, err := share(ctx, seeds, topic, fmt.Sprintf("share-%d-%d", m, stamp), n, m)
		if err != nil {
			return fmt.Errorf("share group of %d: %w", m, err)
		}
		res = append(res, result{fmt.Sprintf("share group, %d member(s)", m), secs})
	}
	fmt.Printf("| run (%d records of %d B, one partition) | records/s | MiB/s | ratio to the classic group |\n|---|---:|---:|---:|\n", n, size)
	for _, r := range res {
		fmt.Printf("| %s | %.0f | %.1f | %.2f |\n", r.name, float64(n)/r.secs, float64(n)*float64(size)/r.secs/(1<<20), res[0].secs/r.secs)
	}
	return nil
}

// produce creates topic with one partition and appends n records to it.
func produce(ctx context.Context, seeds []string, topic string, n int, value []byte) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, 1, -1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return err
	}
	var failed atomic.Value
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	return nil
}

// classic reads n records of topic from the start in a consumer group of
// one member and returns the seconds it took.
func classic(ctx context.Context, seeds []string, topic, group string, n int) (float64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	start := time.Now()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := fetchErr(ctx, fs); err != nil {
			return 0, fmt.Errorf("read %d of %d records: %w", got, n, err)
		}
		got += fs.NumRecords()
	}
	return time.Since(start).Seconds(), nil
}

// share reads and accepts n records of topic in a new share group of m
// members and returns the seconds it took.
func share(ctx context.Context, seeds []string, topic, group string, n, m int) (float64, error) {
	if err := groupConfig(ctx, seeds, group, map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		return 0, fmt.Errorf("group config: %w", err)
	}
	cls := make([]*kgo.Client, m)
	for i := range cls {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		cls[i] = cl
	}
	var got atomic.Int64
	errs := make([]error, m)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i, cl := range cls {
		wg.Go(func() {
			for got.Load() < int64(n) && rctx.Err() == nil {
				fs := cl.PollFetches(rctx)
				if err := fetchErr(rctx, fs); err != nil {
					errs[i] = err
					cancel()
					return
				}
				cl.MarkAcks(kgo.AckAccept)
				if got.Add(int64(fs.NumRecords())) >= int64(n) {
					cancel() // wake the others
				}
			}
			if err := cl.FlushAcks(ctx); err != nil {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if g := got.Load(); g < int64(n) {
		return 0, fmt.Errorf("read %d of %d records", g, n)
	}
	return secs, nil
}

// fetchErr is the first error of fs other than a cancelled poll, or ctx's.
func fetchErr(ctx context.Context, fs kgo.Fetches) error {
	var ferr error
	fs.EachError(func(_ string, _ int32, err error) {
		if !errors.Is(err, context.Canceled) && ferr == nil {
			ferr = err
		}
	})
	if ferr == nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		ferr = ctx.Err()
	}
	return ferr
}

// groupConfig sets the share group's configs (IncrementalAlterConfigs,
// resource type GROUP).
func groupConfig(ctx context.Context, seeds []string, group string, configs map[string]string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for name, value := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = name, kmsg.StringPtr(value)
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if r.ErrorMessage != nil {
				return fmt.Errorf("%w: %s", err, *r.ErrorMessage)
			}
			return err
		}
	}
	return nil
}
