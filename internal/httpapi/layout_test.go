package httpapi

import (
	"net/http"
	"testing"
)

// A produce and a stream's start need the topic's partitions, not their
// offsets: they use TopicLayout, never Topic, which in a cluster asks every
// partition's leader (a Raft round each) and at thousands of partitions
// would cost more than the produce.
func TestProduceAndEventsAskNoLeaderForOffsets(t *testing.T) {
	e := newFakeEnv(t)
	e.createTopic(t, "orders", 8)
	f := e.core().(*fakeCore)
	srv, _ := serve(t, f, Config{})
	var pr produceResp
	if st := do(t, "POST", srv.URL+"/v1/topics/orders/records", `{"records": [{"key": "k", "value": "v"}]}`, nil, &pr); st != http.StatusOK {
		t.Fatalf("produce: %d %+v", st, pr)
	}
	openEvents(t, srv.URL+"/v1/topics/orders/events?from=earliest", "").close()
	if n := f.described.Load(); n != 0 {
		t.Fatalf("produce and a stream's start made %d describes asking every partition's leader, want 0", n)
	}
	// The describe endpoint does ask them: it shows the leaders' offsets.
	if st := do(t, "GET", srv.URL+"/v1/topics/orders", "", nil, nil); st != http.StatusOK {
		t.Fatalf("describe: %d", st)
	}
	if n := f.described.Load(); n != 1 {
		t.Fatalf("GET /v1/topics/orders made %d describes, want 1", n)
	}
}
