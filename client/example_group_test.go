package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/logd/logd/client"
)

// A group member reads its share of the topic's partitions (here, being
// alone, all of them) and commits what it processed; a second process
// running the same code would get half the partitions.
func ExampleGroupConsumer() {
	addr, stop := startExampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c, err := client.Dial(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 2}); err != nil {
		log.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{})
	for _, k := range []string{"alice", "bob", "carol"} {
		p.Produce(ctx, client.Record{Topic: "orders", Key: []byte(k), Value: []byte("order of " + k)})
	}
	if err := p.Close(); err != nil {
		log.Fatal(err)
	}

	gc, err := c.NewGroupConsumer(ctx, client.GroupConsumerOptions{Group: "billing", Topic: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	defer gc.Close() // leaves the group: its partitions go to the others at once
	var got []string
	for len(got) < 3 {
		recs, err := gc.Poll(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
		// Commit after processing: a member that takes a partition over
		// starts after what was committed (at-least-once delivery).
		if err := gc.Commit(ctx); err != nil {
			log.Fatal(err)
		}
	}
	slices.Sort(got) // partitions interleave; each one is in order
	fmt.Println(got, "from partitions", gc.Assigned())
	// Output:
	// [order of alice order of bob order of carol] from partitions [0 1]
}

// Growing a topic: keys hash over the new count from then on, so a key's
// later records may land in another partition than its earlier ones.
func ExampleAdmin_AddPartitions() {
	addr, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.Dial(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	admin := c.Admin()
	if _, err := admin.CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 2}); err != nil {
		log.Fatal(err)
	}
	ti, err := admin.AddPartitions(ctx, "orders", 6)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ti.Name, "has", ti.Partitions, "partitions")
	if _, err := admin.AddPartitions(ctx, "orders", 3); err != nil {
		fmt.Println("fewer is refused:", errors.Is(err, client.ErrInvalidArgument))
	}
	// Output:
	// orders has 6 partitions
	// fewer is refused: true
}
