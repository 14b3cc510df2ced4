package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/client"
)

// Every condition an application branches on is an errors.Is sentinel;
// the gRPC status stays reachable.
func TestServerSentinelErrors(t *testing.T) {
	c, _ := dialServer(t)
	ctx := context.Background()
	admin := c.Admin()
	check := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want errors.Is %v", what, err, want)
		}
	}
	_, err := admin.DescribeTopic(ctx, "nope")
	check("describe an unknown topic", err, client.ErrTopicNotFound)
	if status.Code(err) != codes.NotFound || errors.Is(err, client.ErrTopicExists) {
		t.Errorf("describe an unknown topic: code %v, or matches ErrTopicExists", status.Code(err))
	}
	_, err = c.NewConsumer(ctx, client.ConsumerOptions{Topic: "nope"})
	check("consume an unknown topic", err, client.ErrTopicNotFound)
	p := c.NewProducer(client.ProducerOptions{})
	defer p.Close()
	_, err = p.Produce(ctx, client.Record{Topic: "nope"}).Get(ctx)
	check("produce to an unknown topic", err, client.ErrTopicNotFound)

	if _, err := admin.CreateTopic(ctx, "t", client.TopicOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	_, err = admin.CreateTopic(ctx, "t", client.TopicOptions{})
	check("create an existing topic", err, client.ErrTopicExists)
	_, err = admin.CreateTopic(ctx, "bad/name", client.TopicOptions{})
	check("create a bad name", err, client.ErrInvalidArgument)
	_, err = admin.ResetOffsets(ctx, "g", "t", 7, client.Earliest())
	check("reset partition 7 of 2", err, client.ErrPartitionNotFound)
	_, err = admin.RemoveNode(ctx, "n9")
	if err == nil || errors.Is(err, client.ErrTopicNotFound) {
		t.Errorf("remove an unknown node: %v", err)
	}
	_, err = admin.ListOffsets(ctx, "t", []int32{0}, client.AtOffset(5))
	if err != nil {
		t.Fatal(err)
	}
	check("delete an unknown topic", admin.DeleteTopic(ctx, "gone"), client.ErrTopicNotFound)
}

// With no node listening, a fresh client fails at once: nothing to wait for.
func TestUnreachableFailsFast(t *testing.T) {
	c, err := client.Dial("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Admin().ListTopics(context.Background())
	if !errors.Is(err, client.ErrUnreachable) || !errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrNotLeader) {
		t.Fatalf("%v: want ErrUnreachable and ErrUnavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v: an unreachable cluster on a fresh client should fail at once", d)
	}
}
