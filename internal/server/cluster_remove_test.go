package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	pb "github.com/logd/logd/proto/logd/v1"

	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
)

// A removed node that restarts with its data stays out of the cluster: its
// registration is refused (it would otherwise list itself again, as a
// registration sent before the removal and applied after it did), and its
// /readyz says why.
func TestClusterRemovedNodeStaysOut(t *testing.T) {
	c := nodetest.NewCluster(t, 3, func(cfg *node.Config) { cfg.HTTPAddr = "127.0.0.1:0" })
	cs := newCCs(t, c.Addrs()...)
	lead, rest := metaLeader(t, c)
	gone := rest[0]
	ctx := stepCtx(t)
	if _, err := pb.NewClusterClient(cs.get(lead.APIAddr)).RemoveNode(ctx, &pb.RemoveNodeRequest{NodeId: gone.ID}); err != nil {
		t.Fatalf("remove node: %v", err)
	}
	gone.Stop()
	gone.Restart()
	s := gone.Server()
	relisted := func() bool {
		_, ok := lead.Server().Broker().Cluster().State().Nodes[gone.ID]
		return ok
	}
	waitUntil(t, time.Minute, "the removed node's registration is refused", func() bool {
		return s.Broker().Cluster().Refused() != nil || relisted()
	})
	if relisted() {
		t.Fatalf("the removed node %s is listed again", gone.ID)
	}
	if err := s.Broker().Cluster().Refused(); !strings.Contains(err.Error(), "was removed") {
		t.Fatalf("refusal: %v", err)
	}
	for _, n := range c.Nodes() {
		if n == gone {
			continue
		}
		st := n.Server().Broker().Cluster().State()
		if _, ok := st.Nodes[gone.ID]; ok || len(st.Nodes) != 2 {
			t.Fatalf("%s lists nodes %v", n.ID, st.Nodes)
		}
	}
	resp, err := http.Get("http://" + s.HTTPAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "was removed") {
		t.Fatalf("/readyz of the removed node: %d %s", resp.StatusCode, body)
	}
}
