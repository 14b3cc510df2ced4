package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/logd/logd/client"
)

func ExampleShareConsumer() {
	addr, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.Dial(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Admin().CreateTopic(ctx, "jobs", client.TopicOptions{Partitions: 1}); err != nil {
		log.Fatal(err)
	}
	worker, err := c.ShareConsumer("workers", "jobs")
	if err != nil {
		log.Fatal(err)
	}
	defer worker.Close(ctx)
	// A new share group starts at the end of the topic (share.auto.offset.reset latest).
	if _, err := worker.Poll(ctx, 10, 0); err != nil {
		log.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{})
	for _, job := range []string{"resize", "bad", "email"} {
		if _, err := p.Produce(ctx, client.Record{Topic: "jobs", Value: []byte(job)}).Get(ctx); err != nil {
			log.Fatal(err)
		}
	}
	p.Close()

	for done := 0; done < 3; {
		recs, err := worker.Poll(ctx, 10, time.Second)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range recs {
			switch {
			case string(r.Value) == "bad" && r.DeliveryCount < 2:
				fmt.Printf("%s failed, released\n", r.Value)
				err = worker.Release(r) // delivered again
			default:
				fmt.Printf("%s done (delivery %d)\n", r.Value, r.DeliveryCount)
				err = worker.Ack(r)
				done++
			}
			if err != nil {
				log.Fatal(err)
			}
		}
	}
	if err := worker.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// resize done (delivery 1)
	// bad failed, released
	// email done (delivery 1)
	// bad done (delivery 2)
}
