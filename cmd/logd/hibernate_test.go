package main

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/logd/logd/cluster"
)

// A cluster node puts idle partitions to sleep after a minute unless told
// otherwise; a single node has nothing to put to sleep, so the default
// says nothing there, while the flag given for one is a mistake to report.
func TestBinServeHibernationDefault(t *testing.T) {
	if v, src := configLine(t, okBin(t, nil, "", "serve", "--print-config"), "partition-hibernate-after"); v != `"1m0s"` || src != "default" {
		t.Errorf("partition-hibernate-after = %s (%s), want \"1m0s\" (default)", v, src)
	}
	if v, _ := configLine(t, okBin(t, nil, "", "serve", "--print-config"), "partition-max-awake"); v != strconv.Itoa(1000*runtime.GOMAXPROCS(0)) {
		t.Errorf("partition-max-awake = %s, want 1000 per core (%d cores)", v, runtime.GOMAXPROCS(0))
	}
	dir := t.TempDir()
	failBin(t, nil, "", "needs cluster mode", "serve", "--data-dir", dir, "--partition-hibernate-after", "5s")
	failBin(t, []string{"LOGD_PARTITION_HIBERNATE_AFTER=5s"}, "", "needs cluster mode", "serve", "--data-dir", dir)
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, cluster.DefaultHibernateAfter},
		{[]string{"--partition-hibernate-after", "0"}, 0},
		{[]string{"--partition-hibernate-after", "5s"}, 5 * time.Second},
	} {
		var fl serveFlags
		cmd := &cobra.Command{}
		fl.register(cmd.Flags())
		args := append([]string{"--node-id", "n1", "--raft-addr", "127.0.0.1:0", "--bootstrap"}, tc.args...)
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := fl.nodeConfig()
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Cluster.HibernateAfter; got != tc.want {
			t.Errorf("%q: cluster HibernateAfter %v, want %v", tc.args, got, tc.want)
		}
	}
}
