package logdtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"

	"github.com/logd/logd/client"
	"github.com/logd/logd/logdtest"
)

// A test starts a node with logdtest.Start(t) and gets a client with
// node.Client(t); an example has no *testing.T, so it uses NewNode and
// Close, as a TestMain would.
func Example() {
	node, err := logdtest.NewNode(logdtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer node.Close()
	ctx := context.Background()

	c, err := client.Dial(node.Addr())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 1}); err != nil {
		log.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{})
	for _, v := range []string{"order-1", "order-2"} {
		if _, err := p.Produce(ctx, client.Record{Topic: "orders", Key: []byte("alice"), Value: []byte(v)}).Get(ctx); err != nil {
			log.Fatal(err)
		}
	}
	p.Close()

	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	defer cons.Close()
	for {
		recs, err := cons.Poll(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range recs {
			fmt.Printf("%d %s=%s\n", r.Offset, r.Key, r.Value)
		}
	}
	// Output:
	// 0 alice=order-1
	// 1 alice=order-2
}
