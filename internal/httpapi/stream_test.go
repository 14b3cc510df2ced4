package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/broker"
)

// failingCore answers reads of one partition with an error, a number of
// times, as a cluster does while that partition's leader is replaced.
type failingCore struct {
	Core
	mu    sync.Mutex
	part  int32
	fails int
	err   error
}

func (c *failingCore) Fetch(ctx context.Context, r broker.FetchRequest) (broker.FetchResult, error) {
	c.mu.Lock()
	fail := c.fails > 0 && len(r.Partitions) == 1 && r.Partitions[0].Partition == c.part
	if fail {
		c.fails--
	}
	c.mu.Unlock()
	if fail {
		fp := r.Partitions[0]
		return broker.FetchResult{Release: func() {}, Partitions: []broker.FetchedPartition{{Topic: fp.Topic,
			Partition: fp.Partition, NextOffset: fp.Offset, Err: c.err}}}, nil
	}
	return c.Core.Fetch(ctx, r)
}

func (c *failingCore) left() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fails
}

// TestEventsRetryWhileLeaderless: a partition whose reads fail for want of
// a leader does not end the stream: the other partition's records are
// sent meanwhile, and its own once it reads again, none twice.
func TestEventsRetryWhileLeaderless(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 2)
	fc := &failingCore{Core: f, part: 1, fails: 5, err: &broker.NotLeaderError{What: "partition t-1"}}
	srv, _ := serve(t, fc, Config{})
	s := openEvents(t, srv.URL+"/v1/topics/t/events?from=earliest", "")
	do(t, "POST", srv.URL+"/v1/topics/t/records", `{"records": [{"value": "a", "partition": 0}, {"value": "b", "partition": 1}]}`, nil, nil)
	seen := map[int32][]int64{}
	deadline := time.After(10 * time.Second)
	for len(seen[0])+len(seen[1]) < 2 {
		var ev sseEvent
		select {
		case ev = <-s.events:
		case <-deadline:
			t.Fatalf("records by partition %v after 10s", seen)
		}
		if ev.name == "error" {
			t.Fatalf("the stream ended with an error: %s", ev.data)
		}
		if ev.name == "record" {
			r := recordOf(t, ev)
			seen[r.Partition] = append(seen[r.Partition], r.Offset)
		}
	}
	if len(seen[0]) != 1 || len(seen[1]) != 1 || fc.left() != 0 {
		t.Fatalf("records by partition %v, %d failures left", seen, fc.left())
	}
}

// TestEventsErrorThatStaysEndsStream: an error that does not pass (the
// principal may not read) ends the stream with an error event at once.
func TestEventsErrorThatStaysEndsStream(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 1)
	fc := &failingCore{Core: f, part: 0, fails: 1 << 30, err: broker.ErrDenied}
	srv, _ := serve(t, fc, Config{})
	s := openEvents(t, srv.URL+"/v1/topics/t/events?from=earliest", "")
	ev := s.next(t, "error", 5*time.Second)
	var eb struct {
		Status int `json:"status"`
	}
	if json.Unmarshal([]byte(ev.data), &eb); eb.Status != http.StatusForbidden {
		t.Fatalf("error event %s, want status 403", ev.data)
	}
}

// TestHandlerCloseEndsStreams: Close ends the live tails with an error
// event that says to reconnect (503), as a node stops.
func TestHandlerCloseEndsStreams(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 3)
	srv, h := serve(t, f, Config{})
	s := openEvents(t, srv.URL+"/v1/topics/t/events", "")
	eventually(t, 5*time.Second, "the stream to open", func() bool { return h.OpenStreams() == 1 })
	h.Close()
	ev := s.next(t, "error", 5*time.Second)
	var eb struct {
		Status int `json:"status"`
	}
	if json.Unmarshal([]byte(ev.data), &eb); eb.Status != http.StatusServiceUnavailable {
		t.Fatalf("error event %s, want status 503", ev.data)
	}
	eventually(t, 5*time.Second, "the stream to end", func() bool { return h.OpenStreams() == 0 })
}
