package torture

import (
	"context"
	"flag"
	"os"
	"strconv"
	"testing"
	"time"
)

var (
	flagDuration = flag.Duration("torture.duration", 30*time.Second, "how long the torture runs (env TORTURE_DURATION overrides)")
	flagSeed     = flag.Int64("torture.seed", 1, "the workload's and nemeses' seed (env TORTURE_SEED overrides)")
)

// tortureParams reads the flags and their environment overrides.
func tortureParams(t *testing.T) (time.Duration, int64, string) {
	d, seed := *flagDuration, *flagSeed
	if s := os.Getenv("TORTURE_DURATION"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("TORTURE_DURATION=%q: %v", s, err)
		}
		d = v
	}
	if s := os.Getenv("TORTURE_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("TORTURE_SEED=%q: %v", s, err)
		}
		seed = v
	}
	dir := os.Getenv("TORTURE_REPORT_DIR")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "logd-torture-"); err != nil {
			t.Fatal(err)
		}
		// Kept when the test fails, for the report.
		t.Cleanup(func() {
			if !t.Failed() {
				os.RemoveAll(dir)
			}
		})
	}
	return d, seed, dir
}

// TestTortureSingleNode runs the workload against one real logd process
// while kill -9 and SIGSTOP/SIGCONT nemeses strike it, then checks every
// guarantee on the history.
func TestTortureSingleNode(t *testing.T) {
	if testing.Short() {
		t.Skip("torture: skipped in -short mode")
	}
	d, seed, dir := tortureParams(t)
	ctx := context.Background()
	bin, err := BuildLogd(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := StartProcessCluster(ProcessConfig{Binary: bin, Nodes: 1, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep, err := Run(ctx, c, RunConfig{
		Duration:  d,
		Seed:      seed,
		ReportDir: dir,
		Logf:      t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report in %s\n%s", dir, rep.Text())
	if n := rep.FaultCounts["kill"] + rep.FaultCounts["pause"]; n == 0 && d >= 10*time.Second {
		t.Errorf("no fault was injected in %s", d)
	}
	if rep.Ops[OpProduce][OutcomeOK] == 0 {
		t.Errorf("no produce was acknowledged")
	}
	if !rep.Valid {
		t.Errorf("torture found violations; report in %s", dir)
	}
}
