package client_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/freeport"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
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

// A node that starts while a fresh client's first call retries (`logd
// serve &` and the script's next command) is reached: the client retries
// an unreachable cluster for StartupGrace before it gives up.
func TestFreshClientWaitsForANodeStarting(t *testing.T) {
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		_, err := c.Admin().ListTopics(context.Background())
		done <- err
	}()
	// Start the node once the call has failed to connect at least once:
	// the call is then in its retries.
	for range 100 {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			t.Fatal("something listens on the test's address")
		}
		select {
		case err := <-done:
			t.Fatalf("the call ended before the node started: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	nodetest.Start(t, func(cfg *node.Config) { cfg.Addr = addr })
	if err := <-done; err != nil {
		t.Fatalf("a node that started %v into the call's retries: %v", time.Second, err)
	}
}

// With no node listening, a fresh client fails after StartupGrace, not its
// whole retry timeout: nothing runs there.
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
