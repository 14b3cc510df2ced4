package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/client"
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
