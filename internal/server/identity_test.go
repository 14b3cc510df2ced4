package server_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// A node bootstrapped alone (its own cluster, its own topic), stopped and
// restarted on the same data directory with --join to a running cluster
// is refused and stays out: the cluster's members do not change, and the
// metadata does not split (the cluster has none of its topics, it none of
// the cluster's). With withoutIDFile, its data directory has no cluster id
// file (as one written by a version without ids): the cluster refuses it
// as a node it does not know.
func TestJoinForeignDataDirRefused(t *testing.T) {
	for _, withoutIDFile := range []bool{false, true} {
		name := "with its cluster id"
		if withoutIDFile {
			name = "without an id file"
		}
		t.Run(name, func(t *testing.T) { testJoinForeignDataDir(t, withoutIDFile) })
	}
}

func testJoinForeignDataDir(t *testing.T, withoutIDFile bool) {
	c := nodetest.NewCluster(t, 2)
	ctx := ctx(t)
	cs := newCCs(t, c.Addrs()...)
	createT(ctx, t, cs, c.Nodes()[0].APIAddr)

	o := c.Outsider("n9")
	if _, err := newCCs(t, o.APIAddr).call(ctx, o.APIAddr, func(cc *grpc.ClientConn) error {
		_, err := pb.NewAdminClient(cc).CreateTopic(ctx, &pb.CreateTopicRequest{Name: "foreign", Partitions: 1})
		return err
	}); err != nil {
		t.Fatalf("create a topic on the outsider: %v", err)
	}
	own := o.Server().Broker().Cluster().ClusterID()
	if own == "" || own == c.Nodes()[0].Server().Broker().Cluster().ClusterID() {
		t.Fatalf("outsider's cluster id %q: want one of its own", own)
	}
	o.Stop()
	if withoutIDFile {
		if err := os.Remove(filepath.Join(o.Dir, cluster.ClusterIDFile)); err != nil {
			t.Fatal(err)
		}
	}
	o.Join = c.Nodes()[0].APIAddr
	// With its id file, the node learns at start that the --join node is
	// of another cluster, and does not start; without it, it starts (it
	// cannot tell) and the metadata leader refuses its rejoin.
	var refused error
	if err := o.TryRestart(); err != nil {
		refused = err
	} else if !withoutIDFile {
		t.Fatal("the node with another cluster's id started")
	}
	for deadline := time.Now().Add(30 * time.Second); refused == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		refused = o.Server().Broker().Cluster().Refused()
	}
	if refused == nil {
		t.Fatalf("the node of another cluster was not refused; members: %v", c.Nodes()[0].Server().ClusterMembers())
	}
	if msg := refused.Error(); !strings.Contains(msg, "--data-dir") || !strings.Contains(msg, "another cluster") && !strings.Contains(msg, "belongs to cluster") {
		t.Fatalf("refusal %q does not say the data belongs to another cluster and what to do", msg)
	}
	for _, n := range c.Nodes() {
		if got := n.Server().ClusterMembers(); !slices.Equal(got, []string{"n1", "n2"}) {
			t.Fatalf("%s lists members %v, want n1 n2", n.ID, got)
		}
		if _, ok := n.Server().Broker().Cluster().State().Topics["foreign"]; ok {
			t.Fatalf("%s's metadata holds the outsider's topic", n.ID)
		}
	}
	if o.Server() == nil {
		return // it did not start
	}
	if _, ok := o.Server().Broker().Cluster().State().Topics["t"]; ok {
		t.Fatal("the outsider applied the cluster's metadata")
	}
	if id := o.Server().Broker().Cluster().ClusterID(); id != "" && id != own {
		t.Fatalf("the outsider's cluster id changed from %q to %q", own, id)
	}
}

// Nodes whose data directories lost their cluster id file (or were written
// by a version without ids) take the cluster's id from the metadata they
// apply, and store it again.
func TestClusterIDAdoptedFromMetadata(t *testing.T) {
	c := nodetest.NewCluster(t, 2)
	want := c.Nodes()[0].Server().Broker().Cluster().ClusterID()
	if want == "" {
		t.Fatal("the bootstrapped cluster has no id")
	}
	waitUntil(t, 30*time.Second, "the metadata records the id", func() bool {
		return c.Nodes()[1].Server().Broker().Cluster().State().ClusterID == want
	})
	for _, n := range c.Nodes() {
		n.Stop()
		if err := os.Remove(filepath.Join(n.Dir, cluster.ClusterIDFile)); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes() {
		n.Restart()
	}
	waitUntil(t, 60*time.Second, "both nodes adopt the metadata's id", func() bool {
		for _, n := range c.Nodes() {
			if n.Server().Broker().Cluster().ClusterID() != want {
				return false
			}
		}
		return true
	})
	for _, n := range c.Nodes() {
		b, err := os.ReadFile(filepath.Join(n.Dir, cluster.ClusterIDFile))
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Fatalf("%s's id file: %q, %v; want %s", n.ID, b, err, want)
		}
	}
}
