package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/httpapi"
	"github.com/logd/logd/internal/logging"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/log"
)

// serveFlags are the flags of `logd serve`, as given (on the command line,
// in LOGD_* variables or in the --config file).
type serveFlags struct {
	cfg       node.Config
	fsync     string
	minFree   string
	logLevel  string
	logFormat string
	cluster   struct {
		nodeID, raftAddr, join, advertise string
		bootstrap                         bool
		hibernateAfter                    time.Duration
		hibernateSet                      bool // --partition-hibernate-after given, not its default
		wakeRate                          float64
		maxAwake                          int
	}
	tls         tlsFlags // --tls-ca: the CA of the other nodes' certificates
	auth        struct{ mode, authz, superUsers string }
	configFile  string
	printConfig bool
	kafka       kafkaFlags
	// allowedOrigins is --http-allowed-origins, comma separated.
	allowedOrigins string
	// cleanerRate is --cleaner-bytes-per-second: a size, or unlimited.
	cleanerRate string
}

// newServeCmd is `logd serve`.
func newServeCmd() *cobra.Command {
	var fl serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a logd node",
		Long: `Run a logd node: the gRPC API on --addr, the Kafka protocol on --kafka-addr
(docs/kafka.md), and the HTTP API, console, /metrics, /healthz, /readyz (and
/debug/pprof/ with --pprof) on --http-addr. Data lives in --data-dir. SIGINT or SIGTERM stop
it gracefully: in-flight appends finish and are fsynced.

Cluster mode: --node-id and --raft-addr, with --bootstrap on the first node and
--join <API address of any member> on the others. A restarted node resumes
from its data directory (--bootstrap and --join are then ignored). Every
partition is a Raft group on its topic's --replicas nodes.

Security (docs/security.md): --tls-cert/--tls-key serve TLS, --tls-client-ca
requires client certificates (principal User:<CN>); --auth required refuses
requests without a certificate or a user and password (logd user create);
--authz on enforces ACLs (logd acl add), --super-users bypass them.

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sources, err := applyConfig(cmd.Flags(), fl.configFile, os.LookupEnv)
			if err != nil {
				return err
			}
			// Set to its default (as --print-config writes every value), the
			// flag is no mistake on a single node.
			hib := cmd.Flags().Lookup("partition-hibernate-after")
			fl.cluster.hibernateSet = hib.Changed && hib.Value.String() != hib.DefValue
			cfg, err := fl.nodeConfig()
			if err != nil {
				return err
			}
			if err := fl.kafka.check(cmd.Flags(), &cfg); err != nil {
				return err
			}
			// Printed only once serve would take it.
			if fl.printConfig {
				return printConfig(cmd.OutOrStdout(), cmd.Flags(), sources)
			}
			// Whatever falls back to slog's (or the log package's) default
			// logger writes in the node's format and level too.
			slog.SetDefault(cfg.Logger)
			// SIGHUP is caught before the node starts serving: its default
			// action ends the process, and an operator (or a test) may send
			// it as soon as the node answers. One sent during the start is
			// handled once it has started.
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			n, err := node.Start(cfg)
			if err != nil {
				return err
			}
			for {
				select {
				case <-hup:
					if err := n.ReloadTLS(); err != nil {
						cfg.Logger.Error("SIGHUP: TLS files do not load; the previous ones keep serving", "err", err)
					} else if n.TLSEnabled() {
						cfg.Logger.Info("SIGHUP: TLS files reloaded")
					}
				case <-cmd.Context().Done(): // main cancels it on SIGINT or SIGTERM
					cfg.Logger.Info("shutting down")
					return n.Close()
				}
			}
		},
	}
	fl.register(cmd.Flags())
	return cmd
}

func (fl *serveFlags) register(f *pflag.FlagSet) {
	cfg := &fl.cfg
	f.StringVar(&fl.configFile, "config", "", "read flags not given on the command line from this TOML file (env LOGD_CONFIG)")
	f.BoolVar(&fl.printConfig, "print-config", false, "print the effective configuration as TOML, with where each value came from, and exit")
	f.StringVar(&cfg.DataDir, "data-dir", broker.DefaultDataDir, "directory holding the node's data")
	f.StringVar(&cfg.Addr, "addr", node.DefaultAddr, "gRPC listen address")
	f.StringVar(&cfg.HTTPAddr, "http-addr", node.DefaultHTTPAddr, "HTTP address of the JSON API, console, /metrics, /healthz, /readyz (and pprof with --pprof); empty: none")
	f.StringVar(&fl.fsync, "fsync", "always", "when appends are fsynced: always (before acknowledging; group commit), never, or an interval such as 100ms")
	f.DurationVar(&cfg.RetentionInterval, "retention-interval", broker.DefaultRetentionInterval, "how often the retention trimmer runs")
	f.IntVar(&cfg.MaxBatchBytes, "max-batch-bytes", broker.DefaultMaxBatchBytes, "largest accepted batch or record, in bytes")
	f.StringVar(&fl.minFree, "min-free-bytes", "auto", "refuse appends while the data disk has less free space (auto: 5% of it, 1 MiB to 1 GiB)")
	f.StringVar(&fl.cleanerRate, "cleaner-bytes-per-second", "64MiB", "disk I/O the compaction cleaner may use on this node, reads and writes together, a second, such as 64MiB (unlimited: no bound); Kafka's log.cleaner.io.max.bytes.per.second (docs/compaction.md)")
	f.IntVar(&cfg.CleanerMapEntries, "cleaner-map-entries", broker.DefaultCleanerMapEntries, "keys the compaction cleaner's key map holds, about 48 bytes each (the default is about 48 MiB); a partition with more keys is cleaned in more passes. Kafka's log.cleaner.dedupe.buffer.size, counted in keys (docs/compaction.md)")
	f.StringVar(&fl.logLevel, "log-level", "info", "log level: debug, info, warn, error (Raft's per-partition events are debug)")
	f.StringVar(&fl.logFormat, "log-format", "text", "log format: text (key=value) or json (one object a line)")
	f.IntVar(&cfg.MaxConnections, "max-connections", node.DefaultMaxConnections, "most client connections open at once, on the gRPC API and on the Kafka listener each; past it new ones are closed on arrival")
	f.IntVar(&cfg.MaxHTTPConnections, "max-http-connections", node.DefaultMaxHTTPConnections, "most connections open at once on --http-addr (a live tail holds one); past it a few more serve only /healthz, /readyz and /metrics, then new ones are closed on arrival")
	f.StringVar(&fl.allowedOrigins, "http-allowed-origins", "", "web origins (scheme://host[:port], comma separated, e.g. https://ops.example.com) whose pages may write to --http-addr from a browser and read its answers (CORS); writes from pages of other origins are refused (clients that send no Origin, such as curl, are not)")
	f.DurationVar(&cfg.SendTimeout, "send-timeout", node.DefaultSendTimeout, "end a Subscribe stream whose client leaves a message unread this long")
	f.StringVar(&cfg.TLS.CertFile, "tls-cert", "", "serve the API over TLS with this certificate (PEM; re-read when it changes and on SIGHUP); a cluster node also presents it to the other nodes")
	f.StringVar(&cfg.TLS.KeyFile, "tls-key", "", "the private key of --tls-cert (PEM)")
	f.StringVar(&cfg.TLS.ClientCAFile, "tls-client-ca", "", "require client certificates signed by a CA in this bundle (mutual TLS); the principal is User:<CN>")
	f.StringVar(&fl.tls.ca, "tls-ca", "", "cluster mode with TLS: the CA bundle of the other nodes' API certificates (default: --tls-client-ca, else the system's roots)")
	f.StringVar(&fl.auth.mode, "auth", "none", "who must authenticate: none (everyone is User:ANONYMOUS; warns on a non-loopback address), optional (credentials used when given), required (a client certificate or a user and password)")
	f.StringVar(&fl.auth.authz, "authz", "off", "enforce ACLs: off (everything is allowed) or on (a request no ACL allows is refused; see logd acl --help)")
	f.StringVar(&fl.auth.superUsers, "super-users", "", "principals allowed everything whatever the ACLs say, comma separated: User:admin,User:node1 (list the nodes' certificate principals in a cluster with mutual TLS)")
	f.BoolVar(&cfg.PProf, "pprof", false, "serve Go's profiler at /debug/pprof/ on --http-addr (needs describe on the cluster under --authz on)")
	f.StringVar(&fl.cluster.nodeID, "node-id", "", "cluster mode: this node's id")
	f.StringVar(&fl.cluster.raftAddr, "raft-addr", "", "cluster mode: Raft listen address")
	f.BoolVar(&fl.cluster.bootstrap, "bootstrap", false, "cluster mode: start a new cluster")
	f.StringVar(&fl.cluster.join, "join", "", "cluster mode: API address of a member to join")
	f.StringVar(&fl.cluster.advertise, "raft-advertise", "", "cluster mode: Raft address other nodes dial (default: --raft-addr)")
	f.DurationVar(&fl.cluster.hibernateAfter, "partition-hibernate-after", cluster.DefaultHibernateAfter, "cluster mode: a partition nobody used for this long stops its Raft group on every replica until it is used again, which then costs an election (0: never; see docs/architecture.md)")
	f.Float64Var(&fl.cluster.wakeRate, "partition-wake-rate", 0, fmt.Sprintf("cluster mode, with --partition-hibernate-after: sleeping partitions this node wakes a second for uses, at most; a use beyond it waits or is asked to retry (0: %d; below 0: no bound)", cluster.DefaultWakeRate))
	f.IntVar(&fl.cluster.maxAwake, "partition-max-awake", cluster.DefaultMaxAwake(), "cluster mode, with --partition-hibernate-after: a use wakes a sleeping partition only while fewer of this node's replicas are awake (default: 1000 per core), else it waits or is asked to retry until some fall idle (at the bound, partitions idle for a second sleep); keep it above the partitions clients use at once (0: no bound; see docs/architecture.md)")
	f.StringVar(&cfg.RaftTLS.CertFile, "raft-tls-cert", "", "cluster mode: mutual TLS on the Raft port with this node certificate (PEM; it must name the host of --raft-advertise; re-read when it changes and on SIGHUP)")
	f.StringVar(&cfg.RaftTLS.KeyFile, "raft-tls-key", "", "the private key of --raft-tls-cert (PEM)")
	f.StringVar(&cfg.RaftTLS.CAFile, "raft-tls-ca", "", "the cluster CA bundle: only nodes with a certificate it signed may connect to or join this node's Raft port")
	fl.kafka.register(f)
}

// nodeConfig checks the flags and turns them into the node's Config.
func (fl *serveFlags) nodeConfig() (node.Config, error) {
	cfg := fl.cfg
	policy, err := log.ParseFsyncPolicy(fl.fsync)
	if err != nil {
		return cfg, fmt.Errorf("--fsync: %w", err)
	}
	cfg.Fsync = policy
	if fl.minFree != "auto" {
		n, err := parseSize(fl.minFree)
		if err != nil || n <= 0 {
			return cfg, fmt.Errorf("--min-free-bytes %q: want auto or a positive size such as 1GiB", fl.minFree)
		}
		cfg.MinFreeBytes = n
	}
	if err := fl.cleanerConfig(&cfg); err != nil {
		return cfg, err
	}
	cl := fl.cluster
	if cl.nodeID != "" || cl.raftAddr != "" || cl.join != "" || cl.bootstrap {
		cc := &node.ClusterConfig{NodeID: cl.nodeID, RaftAddr: cl.raftAddr, Advertise: cl.advertise,
			Bootstrap: cl.bootstrap, Join: cl.join, HibernateAfter: cl.hibernateAfter,
			WakeRate: cl.wakeRate, MaxAwake: cl.maxAwake}
		routes, err := parseRoutes(os.Getenv("LOGD_RAFT_ROUTES"))
		if err != nil {
			return cfg, err
		}
		cc.Routes = routes
		if err := cc.Validate(); err != nil {
			return cfg, err
		}
		cfg.Cluster = cc
	} else if cl.hibernateSet && cl.hibernateAfter != 0 {
		// The default applies to cluster mode only; given for a single
		// node, the flag is a mistake worth saying.
		return cfg, errors.New("--partition-hibernate-after needs cluster mode (--node-id, --raft-addr and --bootstrap or --join): a single node has no Raft groups to put to sleep")
	}
	if cfg.TLS.CertFile != "" {
		// A node started with --join asks that node's API for its Raft
		// address as any client does, presenting its own certificate.
		ca := fl.tls.ca
		if ca == "" {
			ca = cfg.TLS.ClientCAFile
		}
		peer, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: ca, CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile})
		if err != nil {
			return cfg, fmt.Errorf("--tls-cert, --tls-key, --tls-ca: %w", err)
		}
		cfg.PeerTLS = peer
	} else if fl.tls.ca != "" || cfg.TLS.KeyFile != "" || cfg.TLS.ClientCAFile != "" {
		return cfg, fmt.Errorf("--tls-key, --tls-client-ca and --tls-ca need --tls-cert (TLS is on only with a certificate)")
	}
	if cfg.Auth, err = fl.authConfig(); err != nil {
		return cfg, err
	}
	if cfg.HTTPAllowedOrigins, err = parseOrigins(fl.allowedOrigins); err != nil {
		return cfg, err
	}
	logger, err := logging.New(os.Stderr, fl.logLevel, fl.logFormat)
	if err != nil {
		return cfg, err
	}
	cfg.Logger = logger
	return cfg, nil
}

// cleanerConfig reads --cleaner-bytes-per-second and --cleaner-map-entries.
func (fl *serveFlags) cleanerConfig(cfg *node.Config) error {
	n, err := parseSize(fl.cleanerRate)
	if err != nil || n == 0 {
		return fmt.Errorf("--cleaner-bytes-per-second %q: want a positive size such as 64MiB, or unlimited", fl.cleanerRate)
	}
	// parseSize's unlimited is -1, the broker's "no bound".
	cfg.CleanerBytesPerSecond = n
	if cfg.CleanerMapEntries < 1 {
		return fmt.Errorf("--cleaner-map-entries %d: want at least 1 key (default %d, about 48 MiB)", cfg.CleanerMapEntries, broker.DefaultCleanerMapEntries)
	}
	return nil
}

// parseOrigins reads --http-allowed-origins: comma-separated origins.
func parseOrigins(s string) ([]string, error) {
	var out []string
	for o := range strings.SplitSeq(s, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	if _, err := httpapi.NewGuard(httpapi.GuardConfig{AllowedOrigins: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// authConfig reads --auth, --authz and --super-users.
func (fl *serveFlags) authConfig() (broker.AuthConfig, error) {
	var c broker.AuthConfig
	var err error
	if c.Mode, err = auth.ParseAuthMode(fl.auth.mode); err != nil {
		return c, fmt.Errorf("--auth: %w", err)
	}
	if c.Authz, err = auth.ParseAuthzMode(fl.auth.authz); err != nil {
		return c, fmt.Errorf("--authz: %w", err)
	}
	if c.SuperUsers, err = auth.ParseSuperUsers(fl.auth.superUsers); err != nil {
		return c, fmt.Errorf("--super-users: %w", err)
	}
	if bu := os.Getenv("LOGD_BOOTSTRAP_USER"); bu != "" {
		name, pw, ok := strings.Cut(bu, ":")
		if !ok || pw == "" {
			return c, fmt.Errorf("LOGD_BOOTSTRAP_USER: want NAME:PASSWORD")
		}
		if err := auth.ValidateUserName(name); err != nil {
			return c, fmt.Errorf("LOGD_BOOTSTRAP_USER: user %q: %v", name, err)
		}
		c.BootstrapUser, c.BootstrapPassword = name, pw
	}
	if c.Authz == auth.AuthzOn && c.Mode == auth.AuthNone && len(c.SuperUsers) > 0 {
		return c, fmt.Errorf("--super-users %s can never be used with --auth none (everyone is User:ANONYMOUS): use --auth optional or required", fl.auth.superUsers)
	}
	return c, nil
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
