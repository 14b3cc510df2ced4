package torture

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The counters of partitions that go to sleep when idle: how
// many times a Raft group went to sleep, and woke, on the node since its
// process started.
const (
	metricRaftSleeps = "logd_raft_sleeps_total"
	metricRaftWakes  = "logd_raft_wakes_total"
	// The cleaner's bytes read and removed compacting, summed over the
	// compacted topics.
	metricCleanerCleaned   = "logd_cleaner_cleaned_bytes_total"
	metricCleanerReclaimed = "logd_cleaner_reclaimed_bytes_total"
)

// metricsScrapeTimeout bounds one scrape of one node: a paused node
// (SIGSTOP) accepts the connection and never answers, and the scraper
// must not wait for it.
const metricsScrapeTimeout = time.Second

// MetricsServer is a Cluster whose nodes serve Prometheus metrics over
// HTTP (a ProcessCluster: each node's --http-addr).
type MetricsServer interface {
	// MetricsURL is node's /metrics URL; it stays the same across restarts.
	MetricsURL(node int) string
}

// CounterScraper reads counters from every node's /metrics, every so
// often while a run goes on, and adds them up over the nodes and their
// restarts (counterTotal). A node that is down or paused misses the
// samples taken meanwhile.
type CounterScraper struct {
	metrics MetricsServer
	size    int
	// pid is the node's process id, 0 when it is not running (see
	// ProcessCluster.PID); nil when the cluster cannot tell, and then a
	// restart shows only as a counter that went down.
	pid    func(node int) int
	names  []string
	client *http.Client

	mu       sync.Mutex
	totals   map[string][]counterTotal // by name, then node
	answered int
	missed   int

	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan struct{}
	result   CounterTotals
}

// CounterTotals is what a CounterScraper read over a run.
type CounterTotals struct {
	// Totals holds each counter seen on at least one node: its increase
	// over the run, summed over the nodes and their incarnations. A
	// counter no node exported is absent.
	Totals map[string]int64
	// Answered and Missed count the scrapes of one node that read its
	// metrics and those that did not (the node down, paused, restarting).
	Answered, Missed int
}

// StartCounterScraper scrapes the counters names from every node of c
// now and every interval until Stop (or until ctx ends). It returns nil
// when c serves no metrics (see MetricsServer); Stop on nil is a no-op.
func StartCounterScraper(ctx context.Context, c Cluster, names []string, interval time.Duration) *CounterScraper {
	ms, ok := c.(MetricsServer)
	if !ok {
		return nil
	}
	s := &CounterScraper{metrics: ms, size: c.Size(), names: names,
		client: &http.Client{Timeout: metricsScrapeTimeout,
			Transport: &http.Transport{DisableKeepAlives: true}},
		totals: map[string][]counterTotal{}, done: make(chan struct{})}
	if p, ok := c.(interface{ PID(node int) int }); ok {
		s.pid = p.PID
	}
	for _, name := range names {
		s.totals[name] = make([]counterTotal, s.size)
	}
	ctx, s.cancel = context.WithCancel(ctx)
	go s.loop(ctx, interval)
	return s
}

// loop scrapes every interval until ctx ends.
func (s *CounterScraper) loop(ctx context.Context, interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.scrapeAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Stop ends the scraping, scrapes every node once more (the run's last
// samples, before the nodes are stopped) and returns the totals. Later
// calls return the same totals.
func (s *CounterScraper) Stop() CounterTotals {
	if s == nil {
		return CounterTotals{}
	}
	s.stopOnce.Do(func() {
		s.cancel()
		<-s.done
		s.scrapeAll(context.Background())
		s.result = s.read()
	})
	return s.result
}

// read sums the totals so far.
func (s *CounterScraper) read() CounterTotals {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := CounterTotals{Totals: map[string]int64{}, Answered: s.answered, Missed: s.missed}
	for name, nodes := range s.totals {
		var sum float64
		seen := false
		for _, t := range nodes {
			sum += t.total
			seen = seen || t.seen
		}
		if seen {
			out.Totals[name] = int64(math.Round(sum))
		}
	}
	return out
}

// scrapeAll scrapes every node at once, so that paused nodes cost one
// timeout rather than one each.
func (s *CounterScraper) scrapeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for node := range s.size {
		wg.Go(func() { s.scrape(ctx, node) })
	}
	wg.Wait()
}

// scrape reads node's counters once and adds them to its totals. A sample
// is kept only when the node ran the same process before and after it
// (with pid), so that it belongs to one incarnation.
func (s *CounterScraper) scrape(ctx context.Context, node int) {
	before := s.incarnation(node)
	var body []byte
	err := errNotRunning
	if before >= 0 {
		body, err = s.get(ctx, node)
	}
	if err != nil || s.incarnation(node) != before {
		s.mu.Lock()
		s.missed++
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answered++
	for _, name := range s.names {
		if v, ok := parseCounter(body, name); ok {
			s.totals[name][node].add(before, v)
		}
	}
}

// incarnation is node's process id, 0 when the cluster cannot tell, -1
// when the node is not running.
func (s *CounterScraper) incarnation(node int) int {
	if s.pid == nil {
		return 0
	}
	if pid := s.pid(node); pid != 0 {
		return pid
	}
	return -1
}

// errNotRunning: the node had no process to scrape.
var errNotRunning = errors.New("torture: metrics: the node is not running")

// maxMetricsBytes bounds what a scrape reads of one /metrics answer.
const maxMetricsBytes = 32 << 20

// get fetches node's /metrics.
func (s *CounterScraper) get(ctx context.Context, node int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.metrics.MetricsURL(node), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("torture: metrics of node %d: %s", node, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxMetricsBytes))
}

// counterTotal adds up one counter of one node across the node's
// restarts. Each process counts from 0, so the counter's increase between
// two samples of one process is their difference, and a sample of a new
// process (another incarnation, or a value below the last: a restart the
// samples missed) adds its whole value.
type counterTotal struct {
	seen        bool
	incarnation int
	last, total float64
}

// add takes the sample v of the process incarnation (its pid, 0 when
// unknown).
func (t *counterTotal) add(incarnation int, v float64) {
	if !t.seen || incarnation != t.incarnation || v < t.last {
		t.total += v
	} else {
		t.total += v - t.last
	}
	t.seen, t.incarnation, t.last = true, incarnation, v
}

// parseCounter is the value of the metric name in body, Prometheus' text
// exposition format: the sum of its series (one without labels), ok false
// when body has no sample of that name. Comments and malformed lines are
// skipped.
func parseCounter(body []byte, name string) (float64, bool) {
	var sum float64
	found := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), maxMetricsBytes)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, name)
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if v, ok := sampleValue(rest); ok {
			sum += v
			found = true
		}
	}
	return sum, found
}

// sampleValue is the value of a sample line whose metric name has been cut
// off: optional {labels}, then the value, then an optional timestamp. ok
// is false when rest does not start so (another metric whose name begins
// with the same letters, or a malformed line).
func sampleValue(rest string) (float64, bool) {
	if strings.HasPrefix(rest, "{") {
		end := labelsEnd(rest)
		if end < 0 {
			return 0, false
		}
		rest = rest[end:]
	}
	if rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
		return 0, false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 || len(fields) > 2 {
		return 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	return v, err == nil
}

// labelsEnd is the index just past the '}' that closes the label set s
// starts with, skipping quoted label values (which may hold '}' and
// escaped quotes); -1 when it is not closed.
func labelsEnd(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == '}':
			return i + 1
		}
	}
	return -1
}
