package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/batch"
)

// Close releases what a member holds: another member gets it at once,
// delivered a second time; an acknowledged record is not delivered again.
func TestShareConsumerCloseReleases(t *testing.T) {
	c, _ := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "jobs", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	a, _ := c.ShareConsumer("w", "jobs")
	b, _ := c.ShareConsumer("w", "jobs")
	defer b.Close(ctx)
	if _, err := a.Poll(ctx, 10, 0); err != nil { // starts the group at the end
		t.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{})
	for _, v := range []string{"x", "y"} {
		if _, err := p.Produce(ctx, client.Record{Topic: "jobs", Value: []byte(v)}).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	recs, err := a.Poll(ctx, 10, 5*time.Second)
	if err != nil || len(recs) != 2 {
		t.Fatalf("a polls %v %v, want 2 records", recs, err)
	}
	if err := a.Ack(recs[0]); err != nil {
		t.Fatal(err)
	}
	if err := a.Ack(recs[0]); err == nil {
		t.Fatal("a second Ack of one record was taken")
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := b.Poll(ctx, 10, 5*time.Second)
	if err != nil || len(got) != 1 || string(got[0].Value) != "y" || got[0].DeliveryCount != 2 {
		t.Fatalf("b polls %+v %v, want y on its second delivery", got, err)
	}
	if _, err := a.Poll(ctx, 1, 0); !errors.Is(err, client.ErrShareConsumerClosed) {
		t.Fatalf("poll after close: %v", err)
	}
}

// RejectWithReason's reason reaches the record's dead letter as its
// logd.dlq.error header, through the gRPC Share service.
func TestShareConsumerRejectWithReason(t *testing.T) {
	c, s := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "jobs", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	w, _ := c.ShareConsumer("w", "jobs")
	defer w.Close(ctx)
	if _, err := w.Poll(ctx, 10, 0); err != nil { // starts the group at the end
		t.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{})
	if _, err := p.Produce(ctx, client.Record{Topic: "jobs", Value: []byte("x")}).Get(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	recs, err := w.Poll(ctx, 10, 5*time.Second)
	if err != nil || len(recs) != 1 {
		t.Fatalf("poll: %v %v", recs, err)
	}
	if err := w.RejectWithReason(recs[0], "no such customer"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := s.Broker().Fetch(ctx, broker.FetchRequest{Partitions: []broker.FetchPartition{{Topic: "jobs.dlq"}}})
	if err != nil || len(res.Partitions) != 1 || res.Partitions[0].Err != nil {
		t.Fatalf("fetch jobs.dlq: %+v %v", res, err)
	}
	defer res.Release()
	var got []string
	err = batch.Split(res.Partitions[0].Batches, func(one []byte, _ batch.Info) error {
		_, rs, err := batch.Decode(one, 0)
		for _, r := range rs {
			for _, h := range r.Headers {
				if h.Key == broker.DLQHeaderError {
					got = append(got, string(h.Value))
				}
			}
		}
		return err
	})
	if err != nil || len(got) != 1 || got[0] != "no such customer" {
		t.Fatalf("jobs.dlq's errors %q %v, want the reason once", got, err)
	}
}
