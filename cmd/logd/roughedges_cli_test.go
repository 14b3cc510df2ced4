package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/client"
)

// offsets reset of a group with members says so in Kafka's terms, not the
// coordinator's "unknown member".
func TestCLIOffsetsResetLiveGroup(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "2")
	c.ok("a\nb\n", "produce", "t")
	cl, err := client.Dial(c.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := cl.NewGroupConsumer(ctx, client.GroupConsumerOptions{Group: "g", Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.run("", "offsets", "reset", "--group", "g", "t", "--to", "earliest")
	if err == nil || !strings.Contains(err.Error(), "1 active member") || !strings.Contains(err.Error(), "stop its consumers first") {
		t.Fatalf("reset of a live group: %v; want its active members named", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	c.ok("", "offsets", "reset", "--group", "g", "t", "--to", "earliest")
}

// group describe of a group that does not exist fails, as HTTP's 404 does.
func TestCLIGroupDescribeNotFound(t *testing.T) {
	c := startCLI(t)
	_, _, err := c.run("", "group", "describe", "nosuchgroup")
	if err == nil || !strings.Contains(err.Error(), `group "nosuchgroup" not found`) {
		t.Fatalf("describe of no group: %v; want not found", err)
	}
	c.ok("", "topic", "create", "t", "--partitions", "1")
	c.ok("a\n", "produce", "t")
	c.ok("", "offsets", "reset", "--group", "committed", "t", "--to", "earliest")
	if out := c.ok("", "group", "describe", "committed"); !strings.Contains(out, "Empty") {
		t.Fatalf("describe of a group with offsets only:\n%s", out)
	}
}
