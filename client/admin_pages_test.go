package client

import (
	"context"
	"fmt"
	"testing"
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
