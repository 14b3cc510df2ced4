package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logd/logd/internal/freeport"
)

// The live tail of a 3-node cluster, through a node, goes on through a
// kill -9 of another node that leads one of its partitions: every record
// produced before and after the kill arrives once, in each partition's
// order.
func TestBinHTTPTailSurvivesKill9(t *testing.T) {
	nodes, all := startBinCluster3(t)
	n1 := nodes["n1"]

	tail := startTail(t, "http://"+n1.http+"/v1/topics/ev/events?from=earliest")
	produce := func(from, to int) {
		var in strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&in, "k%d:v%d\n", i, i)
		}
		okBin(t, nil, in.String(), append([]string{"produce", "ev", "--key-delimiter", ":"}, all...)...)
	}
	produce(0, 30)
	eventually(t, 60*time.Second, "the tail shows the first 30 records", func() bool { return tail.count() >= 30 })

	// kill -9 a node other than the serving one that leads a partition.
	var st struct {
		Partitions []struct {
			Leader string `json:"leader"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(okBin(t, nil, "", append([]string{"cluster", "status", "--json"}, all...)...)), &st); err != nil {
		t.Fatal(err)
	}
	victim := ""
	for _, p := range st.Partitions {
		if p.Leader != "" && p.Leader != "n1" {
			victim = p.Leader
		}
	}
	if victim == "" {
		t.Fatalf("n1 leads every partition: %+v", st.Partitions)
	}
	nodes[victim].signal(syscall.SIGKILL)
	t.Logf("killed %s (kill -9)", victim)
	produce(30, 60)
	eventually(t, 90*time.Second, "the tail shows all 60 records", func() bool { return tail.count() >= 60 })
	time.Sleep(500 * time.Millisecond) // a duplicate would show now
	tail.check(t, 60)
}

// sseTail reads a live tail's records.
type sseTail struct {
	mu   sync.Mutex
	recs []struct {
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Value     string `json:"value"`
	}
	err error
}

func startTail(t *testing.T, url string) *sseTail {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	t.Cleanup(func() { resp.Body.Close() })
	s := &sseTail{}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "record":
				var r struct {
					Partition int32  `json:"partition"`
					Offset    int64  `json:"offset"`
					Value     string `json:"value"`
				}
				err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &r)
				s.mu.Lock()
				if err != nil && s.err == nil {
					s.err = err
				}
				s.recs = append(s.recs, r)
				s.mu.Unlock()
			case strings.HasPrefix(line, "data: ") && event == "error":
				s.mu.Lock()
				s.err = fmt.Errorf("the tail ended with an error: %s", line)
				s.mu.Unlock()
			case line == "":
				event = ""
			}
		}
	}()
	return s
}

func (s *sseTail) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs)
}

// check fails unless the tail showed v0..v(n-1) once each, every
// partition's offsets increasing.
func (s *sseTail) check(t *testing.T, n int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		t.Fatal(s.err)
	}
	seen := map[string]int{}
	last := map[int32]int64{}
	for _, r := range s.recs {
		seen[r.Value]++
		if o, ok := last[r.Partition]; ok && r.Offset <= o {
			t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, o)
		}
		last[r.Partition] = r.Offset
	}
	for i := range n {
		if c := seen[fmt.Sprintf("v%d", i)]; c != 1 {
			t.Fatalf("v%d shown %d times (%d records shown)", i, c, len(s.recs))
		}
	}
	if len(s.recs) != n {
		t.Fatalf("%d records shown, want %d", len(s.recs), n)
	}
}

// startBinCluster3 starts a cluster of three `logd serve` processes, n1
// to n3 (HTTP on, Kafka off), waits until all three are members and makes
// topic ev with 3 partitions of 3 replicas; all are the CLI's --server and
// --timeout flags for the three.
func startBinCluster3(t *testing.T) (map[string]*binNode, []string) {
	t.Helper()
	raft := func() string {
		a, err := freeport.Addr()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	common := []string{"--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--kafka-addr", ""}
	n1 := startBin(t, nil, append(common, "--data-dir", t.TempDir(), "--node-id", "n1", "--raft-addr", raft(), "--bootstrap")...)
	nodes := map[string]*binNode{"n1": n1}
	for _, id := range []string{"n2", "n3"} {
		nodes[id] = startBin(t, nil, append(common, "--data-dir", t.TempDir(), "--node-id", id, "--raft-addr", raft(), "--join", n1.addr)...)
	}
	all := []string{"--server", n1.addr + "," + nodes["n2"].addr + "," + nodes["n3"].addr, "--timeout", "60s"}
	okBin(t, nil, "", append([]string{"cluster", "wait", "--nodes", "3"}, all...)...)
	okBin(t, nil, "", append([]string{"topic", "create", "ev", "--partitions", "3", "--replicas", "3"}, all...)...)
	return nodes, all
}
