package httpapi

import (
	"testing"
	"time"
)

// A live tail from latest under read_committed (the default) starts at
// the last stable offset, so a transaction open then is sent once it
// commits; under read_uncommitted it starts at the high watermark.
func TestEventsLatestReadCommittedStartsAtLastStable(t *testing.T) {
	f := newFakeCore()
	f.addTopic("tx", 1)
	srv, _ := serve(t, f, Config{Heartbeat: 50 * time.Millisecond})
	produceN(t, srv.URL, "tx", 0, 5)
	f.mu.Lock()
	f.topics["tx"][0].lastStable = 2
	f.mu.Unlock()
	s := openEvents(t, srv.URL+"/v1/topics/tx/events", "")
	if ev := s.next(t, "", 5*time.Second); ev.id != "0:2" {
		t.Fatalf("from latest under read_committed starts at %q, want 0:2 (the last stable offset)", ev.id)
	}
	s.close()
	s = openEvents(t, srv.URL+"/v1/topics/tx/events?isolation=read_uncommitted", "")
	if ev := s.next(t, "", 5*time.Second); ev.id != "0:5" {
		t.Fatalf("from latest under read_uncommitted starts at %q, want 0:5 (the high watermark)", ev.id)
	}
	s.close()
}
