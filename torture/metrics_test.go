package torture

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// exposition is /metrics as logd serves it, with the hibernation counters,
// look-alike names and labelled series around them.
const exposition = `# HELP logd_raft_sleeps_total Times a partition's Raft group went to sleep.
# TYPE logd_raft_sleeps_total counter
logd_raft_sleeps_total 2309
# HELP logd_raft_sleeps_total_created not it
logd_raft_sleeps_total_created 1.7e+09
logd_raft_sleeps_totalx 7
# TYPE logd_raft_wakes_total counter
logd_raft_wakes_total 2045 1700000000000
logd_raft_wakes_total2 99
logd_produce_records_total{topic="a"} 10
logd_produce_records_total{topic="b}\"{"} 1.5e+03
logd_produce_records_total{topic="c"} NaNish
logd_broken{topic="x" 3
`

func TestParseCounter(t *testing.T) {
	for _, tc := range []struct {
		name string
		want float64
		ok   bool
	}{
		{metricRaftSleeps, 2309, true},
		{metricRaftWakes, 2045, true},              // with a timestamp
		{"logd_produce_records_total", 1510, true}, // summed over labels, a '}' and a quote in one
		{"logd_raft_sleeps_totalx", 7, true},
		{"logd_raft_wakes_total2", 99, true},
		{"logd_raft", 0, false}, // a prefix of names is none of them
		{"logd_broken", 0, false},
		{"logd_absent_total", 0, false},
	} {
		got, ok := parseCounter([]byte(exposition), tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseCounter(%s) = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// sample is one scrape of a node: its process (pid, 0 unknown) and the
// counter's value.
type sample struct {
	pid int
	v   float64
}

func TestCounterTotalAcrossRestarts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []sample
		want    float64
	}{
		{"one process", []sample{{1, 3}, {1, 3}, {1, 10}}, 10},
		{"counts since the process started", []sample{{1, 4}, {1, 6}}, 6},
		{"a restart seen by its pid, counter already higher", []sample{{1, 10}, {2, 15}, {2, 20}}, 30},
		{"a restart seen by its pid, counter lower", []sample{{1, 10}, {2, 2}, {2, 5}}, 15},
		{"pid unknown: a counter that goes down restarted", []sample{{0, 10}, {0, 3}, {0, 5}}, 15},
		{"two restarts", []sample{{1, 8}, {2, 0}, {3, 4}, {3, 9}}, 17},
		{"none", nil, 0},
	} {
		var ct counterTotal
		for _, s := range tc.samples {
			ct.add(s.pid, s.v)
		}
		if ct.total != tc.want || ct.seen != (len(tc.samples) > 0) {
			t.Errorf("%s: total %v (seen %v), want %v", tc.name, ct.total, ct.seen, tc.want)
		}
	}
}

// fakeMetricsCluster serves each node's counters from an httptest server:
// a node is up (pid > 0), down (pid 0), broken (500) or paused (never
// answers).
type fakeMetricsCluster struct {
	Cluster // only Size is called
	mu      sync.Mutex
	pids    []int
	bodies  []string
	status  []int
	paused  []bool
	servers []*httptest.Server
}

func newFakeMetricsCluster(t *testing.T, n int) *fakeMetricsCluster {
	f := &fakeMetricsCluster{pids: make([]int, n), bodies: make([]string, n), status: make([]int, n), paused: make([]bool, n)}
	for i := range n {
		f.pids[i], f.status[i] = 100+i, http.StatusOK
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.mu.Lock()
			body, status, paused := f.bodies[i], f.status[i], f.paused[i]
			f.mu.Unlock()
			if paused {
				<-r.Context().Done()
				return
			}
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}))
		t.Cleanup(srv.Close)
		f.servers = append(f.servers, srv)
	}
	return f
}

func (f *fakeMetricsCluster) Size() int                  { return len(f.servers) }
func (f *fakeMetricsCluster) MetricsURL(node int) string { return f.servers[node].URL + "/metrics" }
func (f *fakeMetricsCluster) PID(node int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pids[node]
}

// set makes node's process pid serve the sleeps counter at v (v < 0: no
// such counter) with status.
func (f *fakeMetricsCluster) set(node, pid int, v float64, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pids[node], f.status[node] = pid, status
	f.bodies[node] = "logd_other_total 1\n"
	if v >= 0 {
		f.bodies[node] += fmt.Sprintf("%s %v\n", metricRaftSleeps, v)
	}
}

// TestCounterScraperSumsNodesAndRestarts scrapes by hand, through
// restarts, a node down, a broken node and a node without the counter.
func TestCounterScraperSumsNodesAndRestarts(t *testing.T) {
	f := newFakeMetricsCluster(t, 3)
	s := StartCounterScraper(context.Background(), f, []string{metricRaftSleeps, metricRaftWakes}, time.Hour)
	ctx := context.Background()
	f.set(0, 100, 5, http.StatusOK)
	f.set(1, 101, 7, http.StatusOK)
	f.set(2, 102, -1, http.StatusOK)
	s.scrapeAll(ctx)
	f.set(0, 100, 9, http.StatusOK) // +4
	f.set(1, 0, 7, http.StatusOK)   // down: missed
	f.set(2, 102, -1, http.StatusInternalServerError)
	s.scrapeAll(ctx)
	f.set(0, 200, 12, http.StatusOK) // restarted between samples, already past 9: +12
	f.set(1, 301, 3, http.StatusOK)  // restarted: +3
	s.scrapeAll(ctx)
	got := s.Stop() // one more scrape, same values: +0
	if want := int64(9 + 12 + 7 + 3); got.Totals[metricRaftSleeps] != want {
		t.Errorf("sleeps %d, want %d (totals %v)", got.Totals[metricRaftSleeps], want, got.Totals)
	}
	if _, ok := got.Totals[metricRaftWakes]; ok {
		t.Errorf("wakes %v, want absent: no node exports them", got.Totals)
	}
	// Scrapes: the start's (the loop's first, racing the set above: any
	// outcome), 3 by hand and Stop's, of 3 nodes; node 1 down once and
	// node 2 broken once at least.
	if got.Answered+got.Missed < 12 || got.Missed < 2 {
		t.Errorf("answered %d, missed %d: want >= 12 scrapes, >= 2 missed", got.Answered, got.Missed)
	}
}

// TestCounterScraperDoesNotWaitForPausedNodes: a node that never answers
// (SIGSTOP) costs a scrape about metricsScrapeTimeout, and Stop ends the
// scraper's goroutine.
func TestCounterScraperDoesNotWaitForPausedNodes(t *testing.T) {
	f := newFakeMetricsCluster(t, 2)
	f.set(0, 100, 4, http.StatusOK)
	f.set(1, 101, 4, http.StatusOK)
	f.mu.Lock()
	f.paused[1] = true
	f.mu.Unlock()
	s := StartCounterScraper(context.Background(), f, []string{metricRaftSleeps}, 10*time.Millisecond)
	time.Sleep(1500 * time.Millisecond)
	start := time.Now()
	got := s.Stop()
	if d := time.Since(start); d > 3*metricsScrapeTimeout {
		t.Errorf("Stop took %s with a paused node, want about %s", d, metricsScrapeTimeout)
	}
	select {
	case <-s.done:
	default:
		t.Error("the scraper's goroutine still runs after Stop")
	}
	if got.Totals[metricRaftSleeps] != 4 || got.Answered < 2 || got.Missed < 2 {
		t.Errorf("got %+v, want sleeps 4 from node 0 and node 1 missed", got)
	}
}

// TestCounterScraperReadsRealNode scrapes a real logd's /metrics (on the
// --http-addr the cluster gives it) for a counter logd exports today,
// logd_disk_written_bytes_total, across a kill and restart: the total
// grows by what each process wrote.
func TestCounterScraperReadsRealNode(t *testing.T) {
	const written = "logd_disk_written_bytes_total"
	c, w := oneNodeWorkload(t, false)
	ctx := context.Background()
	if err := w.CheckAvailable(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s := StartCounterScraper(ctx, c, []string{written}, time.Hour)
	s.scrapeAll(ctx)
	first := s.read().Totals[written]
	if first <= 0 {
		t.Fatalf("%s read %d from %s after appends, want > 0 (scraped %+v)", written, first, c.MetricsURL(0), s.read())
	}
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	if err := w.CheckAvailable(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	got := s.Stop()
	if got.Totals[written] <= first || got.Answered < 2 {
		t.Errorf("after a restart and more appends: %s total %d (before %d), answered %d: want it above the first process's", written, got.Totals[written], first, got.Answered)
	}
	t.Logf("%s: %d bytes by the first process, %d in all over 2 (scrapes answered %d, missed %d)", written, first, got.Totals[written], got.Answered, got.Missed)
}
