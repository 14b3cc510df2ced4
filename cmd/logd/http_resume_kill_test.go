package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A live tail whose own node is killed (kill -9) resumes on another node
// of the cluster with the Last-Event-ID of the last record it read: every
// record produced before and after the kill is read once, in each
// partition's order.
func TestBinHTTPTailResumesAfterKill9OfItsNode(t *testing.T) {
	nodes, _ := startBinCluster3(t)
	n1, n2, n3 := nodes["n1"], nodes["n2"], nodes["n3"]
	produce := func(from, to int) {
		var in strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&in, "k%d:v%d\n", i, i)
		}
		okBin(t, nil, in.String(), "produce", "ev", "--key-delimiter", ":", "--server", n2.addr+","+n3.addr, "--timeout", "60s")
	}

	r := &resumingTail{}
	r.open(t, "http://"+n1.http+"/v1/topics/ev/events?from=earliest", "")
	produce(0, 30)
	eventually(t, 60*time.Second, "the tail on n1 shows the first 30 records", func() bool { return r.count() >= 30 })
	n1.signal(syscall.SIGKILL)
	produce(30, 60)
	r.open(t, "http://"+n2.http+"/v1/topics/ev/events?from=earliest", r.lastID())
	eventually(t, 90*time.Second, "the tail resumed on n2 shows all 60 records", func() bool { return r.count() >= 60 })
	time.Sleep(500 * time.Millisecond) // a duplicate would show now
	r.check(t, 60)
}

// resumingTail reads live tails one after the other into one list of
// records, remembering the last record event's id.
type resumingTail struct {
	sseTail
	id string // under sseTail.mu, with the records
}

func (r *resumingTail) lastID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

// open reads url's events (with Last-Event-ID: lastID when set) until the
// stream ends or the test does.
func (r *resumingTail) open(t *testing.T, url, lastID string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		sc := bufio.NewScanner(resp.Body)
		event, id := "", ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: ") && event == "record":
				var rec struct {
					Partition int32  `json:"partition"`
					Offset    int64  `json:"offset"`
					Value     string `json:"value"`
				}
				err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &rec)
				r.mu.Lock()
				if err != nil && r.err == nil {
					r.err = err
				}
				r.recs = append(r.recs, rec)
				r.id = id
				r.mu.Unlock()
			case line == "":
				event, id = "", ""
			}
		}
	}()
}
