package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
)

// startNode runs a real logd node with its HTTP port on 127.0.0.1.
func startNode(t *testing.T) *node.Node {
	t.Helper()
	s, err := node.Start(node.Config{Config: broker.Config{DataDir: t.TempDir(), Fsync: broker.FsyncPolicy{Mode: broker.FsyncNever}}, Addr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg := broker.DefaultConfig("mounted")
	if _, err := s.Broker().CreateTopic(context.Background(), "", cfg); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMountedOnHTTPAddr: the node serves the API, the console and its
// own endpoints on --http-addr, and curl -N reads the live tail there.
func TestMountedOnHTTPAddr(t *testing.T) {
	s := startNode(t)
	base := "http://" + s.HTTPAddr()
	resp, err := http.Post(base+"/v1/topics/mounted/records", "application/json",
		strings.NewReader(`{"records": [{"value": "a"}, {"value": "b"}, {"value": "c"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"offset":2`) {
		t.Fatalf("produce on --http-addr: %d %s", resp.StatusCode, b)
	}
	for path, want := range map[string]string{"/healthz": "ok", "/": "logd console", "/v1/topics": `"name":"mounted"`,
		"/v1/cluster": `"http_addr":"` + s.HTTPAddr() + `"`} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Fatalf("GET %s: %d %s, want %q in it", path, resp.StatusCode, b, want)
		}
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is not installed: apt-get install curl")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, curl, "-sN", base+"/v1/topics/mounted/events?from=earliest")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var ids, values []string
	for len(values) < 3 && sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, id)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var rec struct{ Value string }
			json.Unmarshal([]byte(data), &rec)
			values = append(values, rec.Value)
		}
	}
	if strings.Join(ids, " ") != "0:0 0:1 0:2 0:3" || strings.Join(values, "") != "abc" {
		t.Fatalf("curl -N saw ids %v and values %v, want 0:0 0:1 0:2 0:3 and a b c", ids, values)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestClusterPageNodeAlive: /v1/cluster (the console's cluster page) says
// which nodes answer: a stopped node is listed as not alive, the others as
// alive.
func TestClusterPageNodeAlive(t *testing.T) {
	c := nodetest.NewCluster(t, 3, func(cfg *node.Config) { cfg.HTTPAddr = "127.0.0.1:0" })
	nodes := c.Nodes()
	nodes[2].Stop()
	var got map[string]bool
	waitFor(t, 30*time.Second, "n3 reported not alive and n1, n2 alive", func() bool {
		resp, err := http.Get("http://" + nodes[0].Server().HTTPAddr() + "/v1/cluster")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Nodes []struct {
				ID    string `json:"id"`
				Alive bool   `json:"alive"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		got = map[string]bool{}
		for _, n := range body.Nodes {
			got[n.ID] = n.Alive
		}
		return len(got) == 3 && got["n1"] && got["n2"] && !got["n3"]
	})
	t.Logf("alive: %v", got)
}
