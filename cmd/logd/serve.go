package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/logd/logd/internal/server"
	"github.com/logd/logd/log"
)

// newServeCmd is `logd serve`.
func newServeCmd() *cobra.Command {
	var (
		cfg      server.Config
		fsync    string
		minFree  string
		logLevel string
		cluster  struct {
			nodeID, raftAddr, join, advertise string
			bootstrap                         bool
		}
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a logd node",
		Long: `Run a logd node: the gRPC API on --addr, and /metrics, /healthz, /readyz and
/debug/pprof/ on --http-addr. Data lives in --data-dir. SIGINT or SIGTERM stop
it gracefully: in-flight appends finish and are fsynced.

Cluster mode: --node-id and --raft-addr, with --bootstrap on the first node and
--join <API address of any member> on the others. A restarted node resumes
from its data directory (--bootstrap and --join are then ignored). Every
partition is a Raft group on its topic's --replicas nodes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			policy, err := log.ParseFsyncPolicy(fsync)
			if err != nil {
				return fmt.Errorf("--fsync: %w", err)
			}
			cfg.Fsync = policy
			if minFree != "auto" {
				n, err := parseSize(minFree)
				if err != nil || n <= 0 {
					return fmt.Errorf("--min-free-bytes %q: want auto or a positive size such as 1GiB", minFree)
				}
				cfg.MinFreeBytes = n
			}
			if cluster.nodeID != "" || cluster.raftAddr != "" || cluster.join != "" || cluster.bootstrap {
				cc := &server.ClusterConfig{NodeID: cluster.nodeID, RaftAddr: cluster.raftAddr, Advertise: cluster.advertise,
					Bootstrap: cluster.bootstrap, Join: cluster.join}
				routes, err := parseRoutes(os.Getenv("LOGD_RAFT_ROUTES"))
				if err != nil {
					return err
				}
				cc.Routes = routes
				if err := cc.Validate(); err != nil {
					return err
				}
				cfg.Cluster = cc
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: want debug, info, warn or error", logLevel)
			}
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			s, err := server.Start(cfg)
			if err != nil {
				return err
			}
			// main cancels the command's context on SIGINT or SIGTERM.
			<-cmd.Context().Done()
			cfg.Logger.Info("shutting down")
			return s.Close()
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", server.DefaultDataDir, "directory holding the node's data")
	f.StringVar(&cfg.Addr, "addr", server.DefaultAddr, "gRPC listen address")
	f.StringVar(&cfg.HTTPAddr, "http-addr", server.DefaultHTTPAddr, "HTTP address for /metrics, /healthz, /readyz, pprof (empty: none)")
	f.StringVar(&fsync, "fsync", "always", "when appends are fsynced: always (before acknowledging; group commit), never, or an interval such as 100ms")
	f.DurationVar(&cfg.RetentionInterval, "retention-interval", server.DefaultRetentionInterval, "how often the retention trimmer runs")
	f.IntVar(&cfg.MaxBatchBytes, "max-batch-bytes", server.DefaultMaxBatchBytes, "largest accepted batch or record, in bytes")
	f.StringVar(&minFree, "min-free-bytes", "auto", "refuse appends while the data disk has less free space (auto: 5% of it, 1 MiB to 1 GiB)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.IntVar(&cfg.MaxConnections, "max-connections", server.DefaultMaxConnections, "most client connections open at once; past it new ones are closed on arrival")
	f.StringVar(&cluster.nodeID, "node-id", "", "cluster mode: this node's id")
	f.StringVar(&cluster.raftAddr, "raft-addr", "", "cluster mode: Raft listen address")
	f.BoolVar(&cluster.bootstrap, "bootstrap", false, "cluster mode: start a new cluster")
	f.StringVar(&cluster.join, "join", "", "cluster mode: API address of a member to join")
	f.StringVar(&cluster.advertise, "raft-advertise", "", "cluster mode: Raft address other nodes dial (default: --raft-addr)")
	return cmd
}

// parseRoutes reads LOGD_RAFT_ROUTES, "A=B,C=D": dial B when Raft dials
// the address A. It is for test harnesses that put a proxy on each link.
func parseRoutes(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("LOGD_RAFT_ROUTES: %q is not FROM=TO", kv)
		}
		m[from] = to
	}
	return m, nil
}
