package torture

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/logd/logd/client"
)

// RunConfig configures Run.
type RunConfig struct {
	Duration time.Duration // how long workload and nemeses run (default 30s)
	Seed     int64
	// ReportDir receives report.txt, report.json, history.json.gz and any
	// visualization. Required.
	ReportDir string
	Workload  WorkloadConfig
	Nemesis   NemesisConfig
	// NoNemesis runs the workload without faults (a control run).
	NoNemesis    bool
	Linearizable LinearizableOptions
	// Compacted, when set, runs the compacted-topic workload beside
	// Workload (CompactedWorkload) and adds CheckCompacted's verdict.
	Compacted *CompactedConfig
	// KVView, when set, runs the key-value view workload beside Workload
	// (KVViewWorkload) and adds CheckKVView's verdict.
	KVView *KVViewConfig
	Logf   func(format string, args ...any)
	// Txn, when set, runs the transactional workload (TxnWorkload) beside
	// Workload, over the cluster's Kafka listeners, and adds CheckTxn's
	// verdict.
	Txn *TxnConfig
	// Share, when set, runs the share-group workload (ShareWorkload)
	// beside Workload, over the cluster's Kafka listeners, and adds
	// CheckShare's verdict.
	Share *ShareConfig
}

// Report is the outcome of a Run.
type Report struct {
	Seed     int64  `json:"seed"`
	Nodes    int    `json:"nodes"`
	Duration string `json:"duration"`
	// Quiet is the workload's quiet windows, FOR/EVERY (see QuietWindows;
	// "" for none).
	Quiet string `json:"quiet,omitempty"`
	// ServeArgs are the extra `logd serve` flags every node ran with
	// (ProcessConfig.ServeArgs).
	ServeArgs []string `json:"serve_args,omitempty"`
	// Ops counts operations by kind, then outcome.
	Ops map[OpKind]map[Outcome]int `json:"ops"`
	// KafkaProduce counts the produces of the Kafka producers (also in
	// Ops) by outcome: the checkers judge them with the others.
	KafkaProduce map[Outcome]int `json:"kafka_produce,omitempty"`
	// KVView counts the key-value view workload's operations by kind,
	// then outcome (nil: a run without it).
	KVView map[ViewOpKind]map[Outcome]int `json:"kv_view,omitempty"`
	// OpErrors counts the errors of failed and unknown operations, by kind
	// and message (numbers replaced by N, the first 300 bytes; the 10 most
	// frequent).
	OpErrors map[string]int `json:"op_errors,omitempty"`
	// FaultCounts counts nemesis actions by kind.
	FaultCounts map[string]int `json:"fault_counts"`
	Faults      []Fault        `json:"faults"`
	Verdicts    []*Verdict     `json:"verdicts"`
	// Errors are failures beside the checkers' verdicts: a node that exited
	// on its own, a node that would not restart, a partition that accepted
	// no append after the faults stopped, a final read that did not finish.
	Errors []string `json:"errors,omitempty"`
	// ReplicaSleeps and ReplicaWakes are how many times a partition's Raft
	// group went to sleep, and woke, on any replica over the run
	// (logd_raft_sleeps_total and logd_raft_wakes_total, read from every
	// node's /metrics every scrapeInterval and at the end, summed over the
	// nodes and their restarts: see CounterScraper); nil when no node
	// exported the counter (a logd without hibernation, or a cluster
	// without metrics). A run asked to hibernate needs sleeps
	// (CheckHibernation).
	ReplicaSleeps *int64 `json:"replica_sleeps,omitempty"`
	ReplicaWakes  *int64 `json:"replica_wakes,omitempty"`
	// CleanerCleaned and CleanerReclaimed are the bytes the nodes'
	// cleaners read and removed compacting (logd_cleaner_cleaned_bytes_total
	// and logd_cleaner_reclaimed_bytes_total, counted as the sleeps are);
	// nil when no node exported them.
	CleanerCleaned   *int64 `json:"cleaner_cleaned_bytes,omitempty"`
	CleanerReclaimed *int64 `json:"cleaner_reclaimed_bytes,omitempty"`
	// Cluster is the final cluster status (leaders, terms, commit
	// indexes) as the first node to answer saw it, after the final read.
	Cluster *client.ClusterStatus `json:"cluster,omitempty"`
	Valid   bool                  `json:"valid"`
	Files   []string              `json:"files"`
}

// Run runs cfg's workload and nemeses against c for cfg.Duration, heals the
// cluster, lets the producers finish, checks that every partition accepts
// an append again (within 30s), reads every partition to its end,
// checks the history and writes the report into cfg.ReportDir. The caller
// starts and closes c. The returned error is about the harness; the
// system's verdict is Report.Valid.
func Run(ctx context.Context, c Cluster, cfg RunConfig) (*Report, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = 30 * time.Second
	}
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	rep := newReport(c, cfg)

	h := NewHistory()
	w := NewWorkload(c, h, cfg.Workload)
	if cfg.Nemesis.Topic == "" {
		cfg.Nemesis.Topic, cfg.Nemesis.Partitions = w.Config().Topic, w.Config().Partitions
	}
	if cfg.Nemesis.Group == "" && w.Config().GroupMembers > 0 {
		cfg.Nemesis.Group = MemberGroup
	}
	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := w.Setup(setupCtx)
	var side sideRuns
	if err == nil {
		side, err = setupSides(setupCtx, w, h, cfg)
	}
	cancel()
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	scraper := StartCounterScraper(ctx, c, []string{metricRaftSleeps, metricRaftWakes, metricCleanerCleaned, metricCleanerReclaimed}, scrapeInterval)
	defer scraper.Stop()
	w.Run(runCtx)
	side.run(runCtx)
	nemErr := make(chan error, 1)
	if cfg.NoNemesis {
		nemErr <- nil
	} else {
		go func() { nemErr <- RunNemesis(runCtx, c, h, cfg.Nemesis) }()
	}
	<-runCtx.Done()
	if err := <-nemErr; err != nil {
		rep.Errors = append(rep.Errors, "nemesis: "+err.Error())
	}
	cfg.Logf("run over after %s: healed; waiting for the clients", cfg.Duration)
	w.Wait()
	side.wait()
	if err := w.CheckAvailable(ctx, 30*time.Second); err != nil {
		rep.Errors = append(rep.Errors, "availability: "+err.Error())
	}
	finalCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err = w.FinalRead(finalCtx)
	cancel()
	if err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
	side.finalRead(ctx, rep)

	rep.countSleeps(scraper.Stop(), cfg.Logf)
	rep.Cluster = finalStatus(ctx, c)
	ops := h.Ops()
	rep.count(ops, h.Faults(), cfg.ReportDir)
	rep.countKafka(ops, w.Config())
	cfg.Logf("checking %d operations", len(ops))
	rep.check(ops, cfg.Linearizable)
	if err := side.judge(rep, cfg.ReportDir); err != nil {
		return rep, err
	}
	if err := rep.write(cfg.ReportDir, h); err != nil {
		return rep, err
	}
	return rep, nil
}

// sideRuns are the workloads that run beside the main one, each on its
// own topic; a nil run is a workload the configuration leaves out.
type sideRuns struct {
	cr *compactedRun
	vr *kvViewRun
	tr *txnRun
	sr *shareRun
}

func setupSides(ctx context.Context, w *Workload, h *History, cfg RunConfig) (s sideRuns, err error) {
	if s.cr, err = setupCompacted(ctx, w, h, cfg.Compacted); err != nil {
		return s, err
	}
	if s.vr, err = setupKVView(ctx, w, h, cfg.KVView, cfg.Linearizable); err != nil {
		return s, err
	}
	if s.tr, err = setupTxn(ctx, w, cfg.Txn, cfg.ReportDir, nil); err != nil {
		return s, err
	}
	s.sr, err = setupShare(ctx, w, cfg.Share)
	return s, err
}

func (s sideRuns) run(ctx context.Context) {
	s.cr.run(ctx)
	s.vr.run(ctx)
	s.tr.run(ctx)
	s.sr.run(ctx)
}

func (s sideRuns) wait() {
	s.cr.wait()
	s.vr.wait()
	s.tr.wait()
	s.sr.wait()
}

// finalRead reads the side topics to their ends once the run is over.
func (s sideRuns) finalRead(ctx context.Context, rep *Report) {
	s.cr.finalRead(ctx, rep)
	s.tr.finalRead(ctx, rep)
	s.sr.finalRead(ctx, rep)
}

// judge adds each side workload's verdict to rep.
func (s sideRuns) judge(rep *Report, dir string) error {
	return errors.Join(s.cr.judge(rep, dir), s.vr.judge(rep, dir), s.tr.judge(rep, dir), s.sr.judge(rep, dir))
}

// fill checks cfg and fills in what a run derives from the rest.
func (cfg *RunConfig) fill() error {
	if cfg.ReportDir == "" {
		return fmt.Errorf("torture: RunConfig.ReportDir is required")
	}
	if err := cfg.Workload.Quiet.validate(); err != nil {
		return fmt.Errorf("torture: WorkloadConfig.Quiet: %w", err)
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(cfg.ReportDir, 0o755); err != nil {
		return fmt.Errorf("torture: report dir: %w", err)
	}
	cfg.Workload.Seed, cfg.Nemesis.Seed = cfg.Seed, cfg.Seed
	if cfg.Workload.Logf == nil {
		cfg.Workload.Logf = cfg.Logf
	}
	if cfg.Nemesis.Logf == nil {
		cfg.Nemesis.Logf = cfg.Logf
	}
	if cfg.Linearizable.VisualizeDir == "" {
		cfg.Linearizable.VisualizeDir = cfg.ReportDir
	}
	return nil
}

// scrapeInterval is how often a run reads the nodes' counters (see
// CounterScraper): often enough that a node killed between two samples
// loses little of its count.
const scrapeInterval = 2 * time.Second

// check runs the checkers on ops, and CheckHibernation on the sleeps, and
// decides the verdict: valid when every checker is and nothing else went
// wrong.
func (r *Report) check(ops []Op, lin LinearizableOptions) {
	r.Verdicts = CheckAll(ops, CheckOptions{Linearizable: lin})
	if v := CheckHibernation(r.ServeArgs, r.ReplicaSleeps, r.ReplicaWakes); v != nil {
		r.Verdicts = append(r.Verdicts, v)
	}
	r.Valid = len(r.Errors) == 0
	for _, v := range r.Verdicts {
		r.Valid = r.Valid && v.OK()
		r.Files = append(r.Files, v.Artifacts...)
	}
}

// countSleeps keeps the replicas' sleeps and wakes the scraper counted.
func (r *Report) countSleeps(t CounterTotals, logf func(string, ...any)) {
	if n, ok := t.Totals[metricRaftSleeps]; ok {
		r.ReplicaSleeps = &n
	}
	if n, ok := t.Totals[metricRaftWakes]; ok {
		r.ReplicaWakes = &n
	}
	if n, ok := t.Totals[metricCleanerCleaned]; ok {
		r.CleanerCleaned = &n
	}
	if n, ok := t.Totals[metricCleanerReclaimed]; ok {
		r.CleanerReclaimed = &n
	}
	if t.Answered+t.Missed > 0 {
		logf("metrics: %d scrapes of a node answered, %d missed (down, paused or restarting); counters seen: %v", t.Answered, t.Missed, t.Totals)
	}
}

// newReport is a report with what the run is: its seed, cluster, duration
// and knobs (the serve flags of a cluster that has them).
func newReport(c Cluster, cfg RunConfig) *Report {
	rep := &Report{Seed: cfg.Seed, Nodes: c.Size(), Duration: cfg.Duration.String(), Quiet: cfg.Workload.Quiet.String()}
	if sa, ok := c.(interface{ ServeArgs() []string }); ok {
		rep.ServeArgs = sa.ServeArgs()
	}
	return rep
}

// countKafka counts the Kafka producers' produces (their producer ids
// follow CheckAvailable's, see kafkaProduce).
func (r *Report) countKafka(ops []Op, cfg WorkloadConfig) {
	if cfg.KafkaProducers <= 0 {
		return
	}
	r.KafkaProduce = map[Outcome]int{}
	for _, op := range ops {
		if op.Kind == OpProduce && op.Producer > cfg.Producers {
			r.KafkaProduce[op.Outcome]++
		}
	}
}

// count fills in the report's operation and fault counts.
func (r *Report) count(ops []Op, faults []Fault, dir string) {
	r.Ops = map[OpKind]map[Outcome]int{}
	for _, op := range ops {
		if r.Ops[op.Kind] == nil {
			r.Ops[op.Kind] = map[Outcome]int{}
		}
		r.Ops[op.Kind][op.Outcome]++
	}
	r.OpErrors = topErrors(ops, 10)
	r.Faults = faults
	r.FaultCounts = map[string]int{}
	for _, f := range r.Faults {
		r.FaultCounts[f.Kind]++
	}
	if n := r.FaultCounts["crashed"]; n > 0 {
		r.Errors = append(r.Errors, fmt.Sprintf("a node exited on its own %d time(s) (see the node logs in %s)", n, dir))
	}
}

// write saves the report as text and JSON, and the history.
func (r *Report) write(dir string, h *History) error {
	files := map[string]func(*os.File) error{
		"report.txt":  func(f *os.File) error { _, err := f.WriteString(r.Text()); return err },
		"report.json": func(f *os.File) error { e := json.NewEncoder(f); e.SetIndent("", "  "); return e.Encode(r) },
		"history.json.gz": func(f *os.File) error {
			z := gzip.NewWriter(f)
			if err := h.WriteJSON(z); err != nil {
				return err
			}
			return z.Close()
		},
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		r.Files = append(r.Files, filepath.Join(dir, name))
	}
	for name, write := range files {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("torture: report: %w", err)
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("torture: report %s: %w", name, err)
		}
	}
	return nil
}

// Text is the report for people.
func (r *Report) Text() string {
	var b strings.Builder
	verdict := "VALID"
	if !r.Valid {
		verdict = "INVALID"
	}
	fmt.Fprintf(&b, "logd torture: %s — seed %d, %d node(s), %s\n", verdict, r.Seed, r.Nodes, r.Duration)
	if r.Quiet != "" {
		fmt.Fprintf(&b, "quiet windows: %s (FOR/EVERY: the clients started nothing in the last FOR of every EVERY)\n", r.Quiet)
	}
	if len(r.ServeArgs) > 0 {
		fmt.Fprintf(&b, "extra logd serve flags: %s\n", strings.Join(r.ServeArgs, " "))
	}
	if r.ReplicaSleeps != nil || r.ReplicaWakes != nil {
		fmt.Fprintf(&b, "replica sleeps / wakes: %s / %s\n", countOrDash(r.ReplicaSleeps), countOrDash(r.ReplicaWakes))
	}
	if r.CleanerCleaned != nil || r.CleanerReclaimed != nil {
		fmt.Fprintf(&b, "cleaner bytes read / reclaimed: %s / %s\n", countOrDash(r.CleanerCleaned), countOrDash(r.CleanerReclaimed))
	}
	b.WriteString("\n")
	b.WriteString("operations:\n")
	for _, k := range slices.Sorted(maps.Keys(r.Ops)) {
		fmt.Fprintf(&b, "  %-8s", k)
		for _, o := range slices.Sorted(maps.Keys(r.Ops[k])) {
			fmt.Fprintf(&b, " %s=%d", o, r.Ops[k][o])
		}
		b.WriteString("\n")
	}
	if r.KafkaProduce != nil {
		b.WriteString("  of which Kafka produce")
		for _, o := range slices.Sorted(maps.Keys(r.KafkaProduce)) {
			fmt.Fprintf(&b, " %s=%d", o, r.KafkaProduce[o])
		}
		b.WriteString("\n")
	}
	for _, k := range slices.Sorted(maps.Keys(r.KVView)) {
		fmt.Fprintf(&b, "  kv %-9s", k)
		for _, o := range slices.Sorted(maps.Keys(r.KVView[k])) {
			fmt.Fprintf(&b, " %s=%d", o, r.KVView[k][o])
		}
		b.WriteString("\n")
	}
	if len(r.OpErrors) > 0 {
		b.WriteString("errors of failed and unknown operations (most frequent):\n")
		for _, e := range slices.Sorted(maps.Keys(r.OpErrors)) {
			fmt.Fprintf(&b, "  %6d  %s\n", r.OpErrors[e], e)
		}
	}
	b.WriteString("faults:")
	for _, k := range slices.Sorted(maps.Keys(r.FaultCounts)) {
		fmt.Fprintf(&b, " %s=%d", k, r.FaultCounts[k])
	}
	b.WriteString("\n")
	for _, f := range r.Faults {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	if r.Cluster != nil && r.Nodes > 1 {
		b.WriteString("\nfinal cluster status:\n")
		for _, n := range r.Cluster.Nodes {
			fmt.Fprintf(&b, "  node %s api %s raft %s alive=%v\n", n.ID, n.APIAddr, n.RaftAddr, n.Alive)
		}
		for _, p := range r.Cluster.Partitions {
			fmt.Fprintf(&b, "  %s/%d leader %s term %d commit %d replicas %v\n", p.Topic, p.Partition, p.Leader, p.Term, p.CommitIndex, p.Replicas)
		}
	}
	b.WriteString("\nverdicts:\n")
	for _, v := range r.Verdicts {
		fmt.Fprintf(&b, "  %s\n", strings.ReplaceAll(v.String(), "\n", "\n  "))
	}
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	return b.String()
}

// countOrDash is *n, "-" for nil.
func countOrDash(n *int64) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

// finalStatus is the cluster status of the first node to answer, nil when
// none does.
func finalStatus(ctx context.Context, c Cluster) *client.ClusterStatus {
	for i := range c.Size() {
		cl, err := client.Dial(c.Addr(i), client.WithCallTimeout(5*time.Second))
		if err != nil {
			continue
		}
		st, err := cl.Admin().ClusterStatus(ctx)
		cl.Close()
		if err == nil {
			return &st
		}
	}
	return nil
}

var digits = regexp.MustCompile(`[0-9]+`)

// topErrors counts the errors of ops by kind and message and keeps the n
// most frequent.
func topErrors(ops []Op, n int) map[string]int {
	all := map[string]int{}
	for _, op := range ops {
		if op.Err == "" {
			continue
		}
		msg := digits.ReplaceAllString(op.Err, "N") // group "offset 598" with "offset 355"
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		all[string(op.Kind)+": "+msg]++
	}
	keys := slices.SortedFunc(maps.Keys(all), func(a, b string) int { return all[b] - all[a] })
	top := map[string]int{}
	for _, k := range keys[:min(n, len(keys))] {
		top[k] = all[k]
	}
	return top
}
