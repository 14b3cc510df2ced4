package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
)

// group describe shows a share group: its members and, per share
// partition, the window's start and end, the records in flight,
// available or acquired, the backlog and the oldest record's age.
func TestCLIGroupDescribeShare(t *testing.T) {
	n := nodetest.Start(t)
	c := &cli{t: t, addr: n.Addr()}
	ctx := context.Background()
	c.ok("", "topic", "create", "t")
	c.ok("", "consume", "t", "--share", "w") // the group starts at the end: 0
	if _, err := n.Broker().ShareHeartbeat(ctx, broker.ShareHeartbeatRequest{Group: "w", Member: "m1", Topics: []string{"t"}, ClientID: "billing"}); err != nil {
		t.Fatal(err)
	}
	c.ok("a\nb\nc\n", "produce", "t")
	cl, err := client.Dial(n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w, _ := cl.ShareConsumer("w", "t")
	recs, err := w.Poll(ctx, 10, 5*time.Second)
	if err != nil || len(recs) != 3 {
		t.Fatalf("poll: %v %v", recs, err)
	}
	if err := w.Ack(recs[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var j shareGroupJSON
	if err := json.Unmarshal([]byte(c.ok("", "group", "describe", "w", "--json")), &j); err != nil {
		t.Fatal(err)
	}
	want := sharePartStateJSON{Topic: "t", Partition: 0, Start: 1, End: 3, InFlight: 2, Available: 0, Acquired: 2, Backlog: 2}
	if len(j.Partitions) == 1 {
		if age := j.Partitions[0].OldestUnackedMs; age < 0 || age > 60_000 {
			t.Errorf("oldest unacknowledged record's age %d ms", age)
		}
		want.OldestUnackedMs = j.Partitions[0].OldestUnackedMs
	}
	if j.Type != "share" || j.State != "Stable" || len(j.Members) != 1 || j.Members[0].MemberID != "m1" ||
		j.Members[0].ClientID != "billing" || len(j.Partitions) != 1 || j.Partitions[0] != want {
		t.Fatalf("describe --json: %+v, want one member and %+v", j, want)
	}
	if err := w.Close(ctx); err != nil { // releases 1 and 2
		t.Fatal(err)
	}
	out := c.ok("", "group", "describe", "w")
	for _, s := range []string{"share group w: Stable", "m1", "billing", "START", "IN-FLIGHT"} {
		if !strings.Contains(out, s) {
			t.Errorf("describe:\n%s\nwants %q", out, s)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if row := strings.Join(strings.Fields(lines[len(lines)-1]), " "); !strings.HasPrefix(row, "t 0 1 3 2 2 0 2 ") {
		t.Errorf("the share partition's row %q, want t 0, start 1, end 3, 2 in flight, 2 available, 0 acquired, a backlog of 2, then an age", row)
	}
}

// A principal without DESCRIBE on the share group is refused.
func TestCLIGroupDescribeShareRefused(t *testing.T) {
	admin := broker.Principal(auth.User("admin").String())
	n := nodetest.Start(t, func(c *node.Config) {
		c.Auth = broker.AuthConfig{Mode: auth.AuthOptional, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")}}
	})
	ctx := context.Background()
	cfg := broker.DefaultConfig("t")
	if _, err := n.Broker().CreateTopic(ctx, admin, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Broker().ShareHeartbeat(ctx, broker.ShareHeartbeatRequest{Principal: admin, Group: "w", Member: "m1", Topics: []string{"t"}}); err != nil {
		t.Fatal(err)
	}
	c := &cli{t: t, addr: n.Addr()}
	if _, _, err := c.run("", "group", "describe", "w"); err == nil || !strings.Contains(err.Error(), `may not describe group "w"`) {
		t.Fatalf("anonymous describe of a share group: %v, want refused", err)
	}
}
