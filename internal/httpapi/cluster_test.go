package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
)

// httpCluster is a 3-node cluster with HTTP ports, and topic of parts
// partitions on every node, once each partition has a leader every node
// knows. leaders names each partition's leader.
func httpCluster(t *testing.T, topic string, parts int32) (c *nodetest.Cluster, leaders []string) {
	t.Helper()
	c = nodetest.NewCluster(t, 3, func(cfg *node.Config) {
		cfg.HTTPAddr = "127.0.0.1:0"
		cfg.Fsync = broker.FsyncPolicy{Mode: broker.FsyncNever}
	})
	cfg := broker.DefaultConfig(topic)
	cfg.Partitions, cfg.Replicas = parts, 3
	waitFor(t, 60*time.Second, "the topic to be created", func() bool {
		_, err := c.Nodes()[0].Server().Broker().CreateTopic(context.Background(), "", cfg)
		return err == nil || errors.Is(err, broker.ErrTopicExists)
	})
	waitFor(t, 60*time.Second, "every partition to have a leader every node knows", func() bool {
		leaders = nil
		for _, n := range c.Nodes() {
			var tj struct {
				PartitionInfo []struct {
					Leader string `json:"leader"`
				} `json:"partition_info"`
			}
			if getJSON(t, "http://"+n.Server().HTTPAddr()+"/v1/topics/"+topic, &tj) != http.StatusOK || len(tj.PartitionInfo) != int(parts) {
				return false
			}
			for i, p := range tj.PartitionInfo {
				if p.Leader == "" || (len(leaders) == int(parts) && leaders[i] != p.Leader) {
					return false
				}
				if len(leaders) < int(parts) {
					leaders = append(leaders, p.Leader)
				}
			}
		}
		return true
	})
	return c, leaders
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(v)
	return resp.StatusCode
}

// produced is a produce answer.
type produced struct {
	Error   string `json:"error"`
	Records []struct {
		Partition int32  `json:"partition"`
		Offset    *int64 `json:"offset"`
		Error     string `json:"error"`
	} `json:"records"`
}

// post produces body at base and returns the status and answer.
func post(t *testing.T, base, topic, idemKey, body string) (int, produced) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/topics/"+topic+"/records", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans produced
	json.NewDecoder(resp.Body).Decode(&ans)
	return resp.StatusCode, ans
}

// postUntilStored produces body at base until it is answered 200 (a
// leader that stopped is replaced meanwhile: 503), with an Idempotency-Key
// so a retry stores nothing twice.
func postUntilStored(t *testing.T, base, topic, idemKey, body string) produced {
	t.Helper()
	var ans produced
	waitFor(t, 60*time.Second, "a produce to be stored", func() bool {
		var st int
		st, ans = post(t, base, topic, idemKey, body)
		if st != http.StatusOK && st != http.StatusServiceUnavailable {
			t.Fatalf("produce at %s: %d %+v", base, st, ans)
		}
		return st == http.StatusOK
	})
	return ans
}

// keyed is a produce body of n keyed records, values prefix-0, prefix-1...
func keyed(prefix string, n int) string {
	var recs []string
	for i := range n {
		recs = append(recs, fmt.Sprintf(`{"key": "key-%d", "value": "%s-%d"}`, i, prefix, i))
	}
	return `{"records": [` + strings.Join(recs, ", ") + `]}`
}

// sseEvent is one event of a live tail.
type sseEvent struct{ event, id, data string }

// tail opens a live tail and returns its events, until the test ends.
func tail(t *testing.T, url string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	out := make(chan sseEvent, 1000)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.event != "" {
					out <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				e.event = line[len("event: "):]
			case strings.HasPrefix(line, "id: "):
				e.id = line[len("id: "):]
			case strings.HasPrefix(line, "data: "):
				e.data = line[len("data: "):]
			}
		}
	}()
	return out
}

// tailed is a record a live tail sent.
type tailed struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`
}

// readTail reads records from events until it has seen every value of
// want, failing on an error event, a record sent twice or out of its
// partition's order, or a timeout. It returns the last event id.
func readTail(t *testing.T, events <-chan sseEvent, want []string, next map[int32]int64) string {
	t.Helper()
	missing := map[string]bool{}
	for _, v := range want {
		missing[v] = true
	}
	timeout := time.After(90 * time.Second)
	var id string
	for len(missing) > 0 {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("the live tail ended; still missing %d records", len(missing))
			}
			if e.event == "error" {
				t.Fatalf("the live tail sent an error: %s", e.data)
			}
			var r tailed
			if err := json.Unmarshal([]byte(e.data), &r); err != nil {
				t.Fatalf("event %q: %v", e.data, err)
			}
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: record at offset %d, want %d (sent twice, or one skipped)", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			delete(missing, r.Value)
			id = e.id
		case <-timeout:
			t.Fatalf("the live tail did not send %d records in 90s", len(missing))
		}
	}
	return id
}

func values(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

// TestClusterAnyNodeServesHTTP: in a 3-node cluster, a node that leads
// none of a topic's partitions answers every HTTP request: a keyed POST
// spread over partitions other nodes lead stores every record and
// answers each one's offset; the live tail there sends every partition's
// records, in order, with the position id; the records are read there;
// a tail with group= commits the group's offsets, which every node
// reports.
func TestClusterAnyNodeServesHTTP(t *testing.T) {
	c, leaders := httpCluster(t, "two", 2)
	var idle *nodetest.Node
	for _, n := range c.Nodes() {
		if !slices.Contains(leaders, n.ID) {
			idle = n
		}
	}
	base := "http://" + idle.Server().HTTPAddr()
	t.Logf("leaders %v; serving on %s, which leads none", leaders, idle.ID)
	events := tail(t, base+"/v1/topics/two/events?from=earliest")

	st, ans := post(t, base, "two", "", keyed("v", 20))
	if st != http.StatusOK || len(ans.Records) != 20 {
		t.Fatalf("a keyed POST of 20 records on %s: %d %+v", idle.ID, st, ans)
	}
	parts := map[int32]int64{}
	for i, r := range ans.Records {
		if r.Error != "" || r.Offset == nil || *r.Offset != parts[r.Partition] {
			t.Fatalf("record %d: %+v, want stored at the next offset of its partition", i, r)
		}
		parts[r.Partition]++
	}
	if len(parts) != 2 {
		t.Fatalf("the keys went to partitions %v, want both", parts)
	}
	id := readTail(t, events, values("v", 20), map[int32]int64{})
	if want := fmt.Sprintf("0:%d,1:%d", parts[0], parts[1]); id != want {
		t.Fatalf("the last event id is %q, want %q", id, want)
	}

	var read struct {
		Records []tailed `json:"records"`
	}
	if st := getJSON(t, base+"/v1/topics/two/records?partition=1", &read); st != http.StatusOK || int64(len(read.Records)) != parts[1] {
		t.Fatalf("GET records of partition 1 on %s: %d, %d records, want %d", idle.ID, st, len(read.Records), parts[1])
	}

	grouped := tail(t, base+"/v1/topics/two/events?from=earliest&group=watchers")
	readTail(t, grouped, values("v", 20), map[int32]int64{})
	for _, n := range c.Nodes() {
		waitFor(t, 30*time.Second, "the group's commit to be reported on "+n.ID, func() bool {
			var g struct {
				Offsets []struct {
					Committed int64 `json:"committed"`
				} `json:"offsets"`
			}
			if getJSON(t, "http://"+n.Server().HTTPAddr()+"/v1/groups/watchers", &g) != http.StatusOK {
				return false
			}
			var sum int64
			for _, o := range g.Offsets {
				sum += o.Committed
			}
			return sum == 20
		})
		var gs struct {
			Groups []struct {
				Group string `json:"group"`
			} `json:"groups"`
		}
		if st := getJSON(t, "http://"+n.Server().HTTPAddr()+"/v1/groups", &gs); st != http.StatusOK || len(gs.Groups) != 1 || gs.Groups[0].Group != "watchers" {
			t.Fatalf("GET /v1/groups on %s: %d %+v", n.ID, st, gs)
		}
	}
}

// TestClusterTailSurvivesLeaderStop: a live tail on one node goes on when
// another node that leads some of the topic's partitions stops: the
// records produced after it stopped (once new leaders are elected) are
// sent, none twice and none skipped; a tail resumed by its Last-Event-ID
// on another node sends exactly what came after.
func TestClusterTailSurvivesLeaderStop(t *testing.T) {
	c, leaders := httpCluster(t, "kill", 3)
	nodes := c.Nodes()
	var serving, victim, other *nodetest.Node
	for _, n := range nodes {
		switch {
		case n.ID == leaders[0]:
			victim = n
		case serving == nil:
			serving = n
		default:
			other = n
		}
	}
	base := "http://" + serving.Server().HTTPAddr()
	events := tail(t, base+"/v1/topics/kill/events?from=earliest")
	postUntilStored(t, base, "kill", "before", keyed("before", 30))
	next := map[int32]int64{}
	readTail(t, events, values("before", 30), next)

	t.Logf("leaders %v; stopping %s", leaders, victim.ID)
	victim.Stop()
	postUntilStored(t, base, "kill", "after", keyed("after", 30))
	id := readTail(t, events, values("after", 30), next)

	postUntilStored(t, base, "kill", "resumed", keyed("resumed", 10))
	resumed := tail(t, "http://"+other.Server().HTTPAddr()+"/v1/topics/kill/events?last_event_id="+id)
	readTail(t, resumed, values("resumed", 10), next)
}
