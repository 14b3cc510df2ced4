package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logd/logd/broker"
)

func TestEventsResume(t *testing.T)          { testEventsResume(t, newFakeEnv(t)) }
func TestEventsResumeProperty(t *testing.T)  { testEventsResumeProperty(t, newFakeEnv(t)) }
func TestEventsFrom(t *testing.T)            { testEventsFrom(t, newFakeEnv(t)) }
func TestEventsSlowClientIsCut(t *testing.T) { testEventsSlowClientIsCut(t, newFakeEnv(t)) }

// produceN produces n keyed records "v<start+i>" and returns their places.
func produceN(t *testing.T, url, topic string, start, n int) {
	t.Helper()
	var recs []string
	for i := start; i < start+n; i++ {
		recs = append(recs, fmt.Sprintf(`{"key": "k%d", "value": "v%d"}`, i%7, i))
	}
	var pr produceResp
	if st := do(t, "POST", url+"/v1/topics/"+topic+"/records", `{"records": [`+strings.Join(recs, ",")+`]}`, nil, &pr); st != 200 {
		t.Fatalf("produce: %d %+v", st, pr)
	}
}

func recordOf(t *testing.T, ev sseEvent) recordJSON {
	t.Helper()
	var r recordJSON
	if err := json.Unmarshal([]byte(ev.data), &r); err != nil {
		t.Fatalf("event data %q: %v", ev.data, err)
	}
	return r
}

func testEventsResume(t *testing.T, e env) {
	e.createTopic(t, "tail", 3)
	srv, _ := serve(t, e.core(), Config{})
	events := srv.URL + "/v1/topics/tail/events?from=latest"
	s := openEvents(t, events, "")
	start := s.next(t, "", 5*time.Second)
	if start.id != "0:0,1:0,2:0" {
		t.Fatalf("starting id %q, want 0:0,1:0,2:0", start.id)
	}
	s.close()
	// Records produced while no one listens are sent after a reconnect
	// with the starting id, though from=latest.
	produceN(t, srv.URL, "tail", 0, 10)
	s = openEvents(t, events, start.id)
	seen := map[string]bool{}
	var last sseEvent
	for range 6 {
		last = s.next(t, "record", 5*time.Second)
		seen[*recordOf(t, last).Value] = true
	}
	s.close()
	produceN(t, srv.URL, "tail", 10, 5)
	s = openEvents(t, events, last.id)
	for range 9 {
		v := *recordOf(t, s.next(t, "record", 5*time.Second)).Value
		if seen[v] {
			t.Fatalf("%s sent again after resuming at %s", v, last.id)
		}
		seen[v] = true
	}
	if len(seen) != 15 {
		t.Fatalf("saw %d distinct records, want 15", len(seen))
	}
	// Nothing more: the next thing is no record within a short while.
	select {
	case ev := <-s.events:
		if ev.name == "record" {
			t.Fatalf("extra record %s", ev.data)
		}
	case <-time.After(200 * time.Millisecond):
	}
}

// testEventsResumeProperty disconnects at random points while records are
// produced and checks that every record is seen exactly once, each
// partition's in offset order.
func testEventsResumeProperty(t *testing.T, e env) {
	e.createTopic(t, "prop", 4)
	srv, _ := serve(t, e.core(), Config{})
	rng := rand.New(rand.NewPCG(1, 2))
	next := map[int32]int64{}
	lastID, produced, received := "", 0, 0
	for round := range 12 {
		n := rng.IntN(20) + 1
		produceN(t, srv.URL, "prop", produced, n)
		produced += n
		s := openEvents(t, srv.URL+"/v1/topics/prop/events?from=earliest", lastID)
		take := rng.IntN(produced - received + 1) // may read none
		for range take {
			ev := s.next(t, "record", 5*time.Second)
			r := recordOf(t, ev)
			if r.Offset != next[r.Partition] {
				t.Fatalf("round %d: partition %d offset %d, want %d (gap or duplicate)", round, r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			lastID = ev.id
			received++
		}
		s.close()
	}
	s := openEvents(t, srv.URL+"/v1/topics/prop/events?from=earliest", lastID)
	for received < produced {
		r := recordOf(t, s.next(t, "record", 5*time.Second))
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
		received++
	}
}

func testEventsFrom(t *testing.T, e env) {
	e.createTopic(t, "from", 2)
	srv, _ := serve(t, e.core(), Config{Heartbeat: 50 * time.Millisecond})
	produceN(t, srv.URL, "from", 0, 10)
	var p0 readResp
	do(t, "GET", srv.URL+"/v1/topics/from/records?partition=0", "", nil, &p0)
	if len(p0.Records) < 3 {
		t.Fatalf("partition 0 holds %d records; the test needs 3", len(p0.Records))
	}
	s := openEvents(t, srv.URL+"/v1/topics/from/events?partition=0&from=2", "")
	if ev := s.next(t, "", 5*time.Second); ev.id != "0:2" {
		t.Fatalf("from=2 starts at %q", ev.id)
	}
	if r := recordOf(t, s.next(t, "record", 5*time.Second)); r.Offset != 2 || r.Partition != 0 {
		t.Fatalf("from=2 sent %+v first", r)
	}
	s.close()
	s = openEvents(t, srv.URL+"/v1/topics/from/events?from=-1h", "")
	if r := recordOf(t, s.next(t, "record", 5*time.Second)); r.Offset != 0 {
		t.Fatalf("from=-1h sent offset %d first, want 0", r.Offset)
	}
	s.close()
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	s = openEvents(t, srv.URL+"/v1/topics/from/events?from="+future, "")
	want := fmt.Sprintf("0:%d,1:%d", p0.HighWatermark, 10-p0.HighWatermark)
	if ev := s.next(t, "", 5*time.Second); ev.id != want {
		t.Fatalf("from a future time starts at %q, want %q", ev.id, want)
	}
	// An idle stream sends heartbeat comments.
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-s.events:
			if ev.name == "record" {
				t.Fatalf("record %s from a future time", ev.data)
			}
			if strings.HasPrefix(ev.comment, ": heartbeat") {
				return
			}
		case <-deadline:
			t.Fatal("no heartbeat comment")
		}
	}
}

// countingCore counts the bytes of fetch responses not yet released.
type countingCore struct {
	Core
	mu               sync.Mutex
	outstanding, max int
}

func (c *countingCore) Fetch(ctx context.Context, r broker.FetchRequest) (broker.FetchResult, error) {
	res, err := c.Core.Fetch(ctx, r)
	n := 0
	for _, p := range res.Partitions {
		n += len(p.Batches)
	}
	c.mu.Lock()
	c.outstanding += n
	c.max = max(c.max, c.outstanding)
	c.mu.Unlock()
	rel := res.Release
	var once sync.Once
	res.Release = func() {
		once.Do(func() {
			c.mu.Lock()
			c.outstanding -= n
			c.mu.Unlock()
			if rel != nil {
				rel()
			}
		})
	}
	return res, err
}

// testEventsSlowClientIsCut: a client that reads nothing holds at most one
// fetch response on the server and is disconnected after the send timeout.
func testEventsSlowClientIsCut(t *testing.T, e env) {
	e.createTopic(t, "slow", 1)
	cc := &countingCore{Core: e.core()}
	h := New(cc, Config{SendTimeout: 300 * time.Millisecond})
	srv := httptest.NewUnstartedServer(h)
	// Small socket buffers on both ends, so that a few hundred KiB fill
	// them (loopback's autotuned buffers hold megabytes).
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && st == http.StateNew {
			tc.SetWriteBuffer(4096)
		}
	}
	srv.Start()
	defer srv.Close()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/topics/slow/events?from=earliest HTTP/1.1\r\nHost: x\r\n\r\n")
	eventually(t, 5*time.Second, "the stream to open", func() bool { return h.OpenStreams() == 1 })
	value := strings.Repeat("x", 60<<10)
	body := `{"records": [` + strings.Repeat(`{"value": "`+value+`"},`, 15) + `{"value": "end"}]}`
	for range 3 { // about 3 MiB: many times the buffers and maxStreamBytes
		if st := do(t, "POST", srv.URL+"/v1/topics/slow/records", body, nil, nil); st != 200 {
			t.Fatalf("produce: %d", st)
		}
	}
	eventually(t, 10*time.Second, "the slow stream to be cut", func() bool { return h.OpenStreams() == 0 })
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if bound := maxStreamBytes + 2<<20; cc.max > bound {
		t.Fatalf("the stream held %d bytes of fetched records at once, want at most %d", cc.max, bound)
	}
	if cc.outstanding != 0 {
		t.Fatalf("%d fetched bytes never released", cc.outstanding)
	}
}

func TestEventsRetentionGapEndsStream(t *testing.T) {
	f := newFakeCore()
	f.addTopic("gone", 1)
	srv, _ := serve(t, f, Config{})
	produceN(t, srv.URL, "gone", 0, 5)
	f.mu.Lock()
	f.topics["gone"][0].start = 3 // retention removed offsets 0 to 2
	f.mu.Unlock()
	s := openEvents(t, srv.URL+"/v1/topics/gone/events", "0:1")
	ev := s.next(t, "error", 5*time.Second)
	var eb struct {
		Error  string `json:"error"`
		Status int    `json:"status"`
	}
	json.Unmarshal([]byte(ev.data), &eb)
	if eb.Status != http.StatusRequestedRangeNotSatisfiable || !strings.Contains(eb.Error, "3 to 5") {
		t.Fatalf("error event %s", ev.data)
	}
}

func TestPositionRoundTrip(t *testing.T) {
	p := position{parts: []int32{0, 1, 7}, next: []int64{42, 0, 1 << 40}}
	got, err := parsePosition(p.String())
	if err != nil || len(got) != 3 || got[0] != 42 || got[1] != 0 || got[7] != 1<<40 {
		t.Fatalf("parsePosition(%q) = %v, %v", p.String(), got, err)
	}
	for _, bad := range []string{"", "0", "0:", ":1", "0:1,0:2", "-1:0", "0:-1", "a:b", "0:1,,1:2", "99999999999:0"} {
		if _, err := parsePosition(bad); err == nil {
			t.Errorf("parsePosition(%q) accepted", bad)
		}
	}
}

func TestEventsGroupCommit(t *testing.T) { testEventsGroupCommit(t, newFakeEnv(t)) }

// testEventsGroupCommit: group=G commits what the stream sent, and a new
// stream of the group without an event id resumes there.
func testEventsGroupCommit(t *testing.T, e env) {
	e.createTopic(t, "gc", 1)
	srv, h := serve(t, e.core(), Config{})
	produceN(t, srv.URL, "gc", 0, 5)
	s := openEvents(t, srv.URL+"/v1/topics/gc/events?from=earliest&group=tailers", "")
	for range 5 {
		s.next(t, "record", 5*time.Second)
	}
	eventually(t, 5*time.Second, "the group's commit", func() bool {
		var g groupJSON
		return do(t, "GET", srv.URL+"/v1/groups/tailers", "", nil, &g) == 200 && len(g.Offsets) == 1 && g.Offsets[0].Committed == 5
	})
	s.close()
	// Records produced while the first stream is still open could be
	// written to its closed connection and committed (at-most-once).
	eventually(t, 5*time.Second, "the first stream to end", func() bool { return h.OpenStreams() == 0 })
	produceN(t, srv.URL, "gc", 5, 2)
	s = openEvents(t, srv.URL+"/v1/topics/gc/events?from=earliest&group=tailers", "")
	if r := recordOf(t, s.next(t, "record", 5*time.Second)); r.Offset != 5 {
		t.Fatalf("the group's new stream starts at offset %d, want 5", r.Offset)
	}
}
