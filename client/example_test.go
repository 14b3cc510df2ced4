package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
)

// startExampleServer starts an in-process node for the examples; a real
// program dials a running `logd serve` (127.0.0.1:7070 by default).
func startExampleServer() (addr string, stop func()) {
	dir, err := os.MkdirTemp("", "logd-example-")
	if err != nil {
		log.Fatal(err)
	}
	s, err := node.Start(node.Config{Config: broker.Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)}, Addr: "127.0.0.1:0"})
	if err != nil {
		log.Fatal(err)
	}
	return s.Addr(), func() { s.Close(); os.RemoveAll(dir) }
}

func ExampleAdmin() {
	addr, stop := startExampleServer()
	defer stop()
	ctx := context.Background()

	c, err := client.Dial(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	admin := c.Admin()

	_, err = admin.CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 3, Config: client.TopicConfig{
		RetentionTime:  7 * 24 * time.Hour,
		RetentionBytes: 10 << 30, // per partition
	}})
	if err != nil {
		log.Fatal(err)
	}
	// Keep everything: the change applies at the next retention pass.
	if _, err := admin.AlterTopic(ctx, "orders", client.TopicConfig{RetentionTime: client.Unlimited}); err != nil {
		log.Fatal(err)
	}
	d, err := admin.DescribeTopic(ctx, "orders")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Topic.Name, d.Topic.Partitions, "partitions; unlimited retention time:", d.Topic.Config.RetentionTime == client.Unlimited)
	for _, p := range d.Partitions {
		fmt.Printf("partition %d: offsets %d to %d\n", p.Partition, p.LogStartOffset, p.HighWatermark)
	}
	// Output:
	// orders 3 partitions; unlimited retention time: true
	// partition 0: offsets 0 to 0
	// partition 1: offsets 0 to 0
	// partition 2: offsets 0 to 0
}

// Branching on an error: every condition is a sentinel for errors.Is.
func ExampleAdmin_CreateTopic() {
	addr, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.Dial(addr, client.WithRetryTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	for range 2 {
		_, err := c.Admin().CreateTopic(ctx, "payments", client.TopicOptions{Partitions: 4})
		switch {
		case errors.Is(err, client.ErrTopicExists):
			fmt.Println("payments exists already")
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Println("created payments")
		}
	}
	if _, err := c.Admin().DescribeTopic(ctx, "refunds"); errors.Is(err, client.ErrTopicNotFound) {
		fmt.Println("no topic refunds")
	}
	// Output:
	// created payments
	// payments exists already
	// no topic refunds
}

func ExampleProducer() {
	addr, stop := startExampleServer()
	defer stop()
	ctx := context.Background()

	c, err := client.Dial(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Admin().CreateTopic(ctx, "payments", client.TopicOptions{Partitions: 4}); err != nil {
		log.Fatal(err)
	}

	p := c.NewProducer(client.ProducerOptions{Acks: client.AcksAll})
	// Records with one key land in one partition, in order.
	var futures []*client.Future
	for i := range 3 {
		futures = append(futures, p.Produce(ctx, client.Record{
			Topic: "payments", Key: []byte("alice"), Value: []byte(fmt.Sprintf("payment %d", i)),
		}))
	}
	for _, f := range futures {
		ack, err := f.Get(ctx)
		if err != nil {
			log.Fatal(err) // not acknowledged: retried until the delivery timeout
		}
		fmt.Printf("acknowledged at offset %d\n", ack.Offset)
	}
	// Close sends what is still buffered and waits for it.
	if err := p.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// acknowledged at offset 0
	// acknowledged at offset 1
	// acknowledged at offset 2
}

func ExampleConsumer() {
	addr, stop := startExampleServer()
	defer stop()
	ctx := context.Background()

	c, err := client.Dial(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Admin().CreateTopic(ctx, "events", client.TopicOptions{Partitions: 1}); err != nil {
		log.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{})
	for _, v := range []string{"created", "paid", "shipped"} {
		p.Produce(ctx, client.Record{Topic: "events", Key: []byte("order-1"), Value: []byte(v)})
	}
	p.Close()

	// A group starts from its committed offset (earliest when it has none).
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: "events", Group: "shipping"})
	if err != nil {
		log.Fatal(err)
	}
	defer cons.Close()
	for {
		recs, err := cons.Poll(ctx)
		if errors.Is(err, io.EOF) {
			break // the end of the log as it was at start (set Follow to wait)
		}
		var oor *client.OutOfRangeError
		if errors.As(err, &oor) {
			// Retention removed what we asked for: skip to what is left.
			cons.SeekPartition(ctx, oor.Partition, client.AtOffset(oor.LogStartOffset))
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range recs {
			fmt.Printf("%d %s=%s\n", r.Offset, r.Key, r.Value)
		}
		// Commit after processing: at-least-once.
		if err := cons.Commit(ctx); err != nil {
			log.Fatal(err)
		}
	}
	offs, err := c.Admin().FetchOffsets(ctx, "shipping", "events")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed", offs[0].Offset, "lag", offs[0].Lag)
	// Output:
	// 0 order-1=created
	// 1 order-1=paid
	// 2 order-1=shipped
	// committed 3 lag 0
}
