package client

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestListTopicsFollowsPages: Admin.ListTopics returns every topic of a
// server that answers in pages (issue 17 item 7), in name order.
func TestListTopicsFollowsPages(t *testing.T) {
	f, c := dialFake(t)
	for i := range 5 {
		f.createTopic(fmt.Sprintf("t%d", i), 1)
	}
	got, err := c.Admin().ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0].Name != "t0" || got[4].Name != "t4" {
		t.Fatalf("%d topics: %+v", len(got), got)
	}
}

// A cluster answers CreateTopic only once the new partitions have leaders,
// or after waiting for them until just before the call's deadline
// (cluster.setupContext): each attempt gets setupWait beyond the call
// timeout, so the server's answer is read, not cut off as a server that
// did not answer.
func TestCreateTopicWaitsForTheServersSetup(t *testing.T) {
	f := startFake(t)
	f.mu.Lock()
	f.setupDelay = 600 * time.Millisecond
	f.mu.Unlock()
	c, err := Dial(f.addr, WithCallTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Admin().CreateTopic(context.Background(), "slow", TopicOptions{Partitions: 3}); err != nil {
		t.Fatalf("create topic answered after 600ms with a call timeout of 200ms: %v", err)
	}
}
