package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/logd/logd/broker"
)

// Nemesis kinds.
const (
	// NemesisKill kills a random node with SIGKILL, waits, restarts it.
	NemesisKill = "kill"
	// NemesisPause stops a random node with SIGSTOP, waits, resumes it
	// with SIGCONT.
	NemesisPause = "pause"
	// NemesisPauseKill stops a random node with SIGSTOP, waits, kills it
	// while it is frozen (what it had accepted but not processed is lost
	// with it) and restarts it.
	NemesisPauseKill = "pause-kill"
	// NemesisDiskFull fills a random node's disk (writes fail with ENOSPC),
	// waits, and frees it. The Cluster must be a DiskFiller.
	NemesisDiskFull = "disk-full"
	// NemesisNetCut resets every client connection to a random node and
	// refuses new ones, then heals. The Cluster must be a NetworkFaulter.
	NemesisNetCut = "net-cut"
	// NemesisNetBlackhole holds every byte between clients and a random
	// node (requests may arrive while answers do not), then delivers them.
	NemesisNetBlackhole = "net-blackhole"
	// NemesisNetSlow delays every chunk between clients and a random node
	// by a tenth of the fault's length, then heals.
	NemesisNetSlow = "net-slow"
	// NemesisClientCut cuts one producer's own connection (see ClientNet)
	// while the other clients go on, then heals it. Combined with a kill
	// (Combine), the kill comes a third of the way in: the cut client's
	// request may have been applied, its answer lost, other producers' appends
	// roll the segment, the node restarts, and the client retries.
	NemesisClientCut = "client-cut"
	// NemesisClientMute holds the answers to one producer (see ClientNet)
	// while its requests still arrive and are applied: it retries them,
	// unanswered, until healed. Combined with a kill, its last applied
	// batch is retried after the restart.
	NemesisClientMute = "client-mute"
	// NemesisPartitionIsolate cuts a node (the leader, with TargetLeader)
	// off from every other node, then heals. The Cluster must be a
	// Partitioner. Half the partitions reset the links' connections, half
	// hold their bytes (a blackhole, delivered when healed).
	NemesisPartitionIsolate = "partition-isolate"
	// NemesisPartitionHalves splits the nodes into a minority holding the
	// struck node and a majority (with 3 nodes: the node alone).
	NemesisPartitionHalves = "partition-halves"
	// NemesisPartitionBridge keeps the struck node connected to all and
	// splits the others into two halves that cannot reach each other:
	// each half with the bridge is a majority.
	NemesisPartitionBridge = "partition-bridge"
	// NemesisDiskSlow delays every fsync of a node's logs by a tenth of
	// the fault's length (at most 500ms), then heals. The Cluster must be a
	// DiskSlower.
	NemesisDiskSlow = "disk-slow"
)

// NemesisConfig configures RunNemesis. Zero values take the defaults.
type NemesisConfig struct {
	// Kinds are the faults to choose from (default all three).
	Kinds []string
	// Interval is the mean healthy time between faults (default 2s); the
	// actual gap is uniform in [Interval/2, 3*Interval/2].
	Interval time.Duration
	// MinDown and MaxDown bound how long a node stays killed or paused
	// (default 300ms to 3s).
	MinDown, MaxDown time.Duration
	Seed             int64
	Logf             func(format string, args ...any)
	// TargetLeader makes each fault strike the leader of a random
	// partition of Topic (which has Partitions partitions) rather than a
	// random node. Run fills Topic and Partitions from the workload.
	TargetLeader bool
	// LeaderShare, with TargetLeader, is the share of faults that strike a
	// leader, the others a random node (0: all of them).
	LeaderShare float64
	Topic       string
	Partitions  int32
	// MetaLeaderShare is the share of faults that strike the metadata
	// leader, where the coordinator of Group runs (found through the
	// group's description; the others are chosen as above), so that the
	// group's members live through coordinator moves. Run sets Group to
	// MemberGroup when the workload runs group members.
	MetaLeaderShare float64
	Group           string
	// ClientNet is the workload's per-client network, for NemesisClientCut.
	ClientNet *ClientNet
	// Combine, when set, makes about half of the faults two at once: a
	// process fault (kill, pause, pause-kill) together with one of the
	// node's network or disk, when Kinds has both classes.
	Combine bool
	// WhileDown, when set, runs after a kill and before the restart,
	// recorded as a "tamper" fault. Harness self-tests use it to damage a
	// node's data (as a disk that lies about fsync would) and check that
	// the checkers notice.
	WhileDown func(node int) error
}

func (c *NemesisConfig) setDefaults() {
	if len(c.Kinds) == 0 {
		c.Kinds = []string{NemesisKill, NemesisPause, NemesisPauseKill}
	}
	if c.Interval <= 0 {
		c.Interval = 2 * time.Second
	}
	if c.MinDown <= 0 {
		c.MinDown = 300 * time.Millisecond
	}
	if c.MaxDown < c.MinDown {
		c.MaxDown = max(c.MinDown, 3*time.Second)
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// RunNemesis injects one fault at a time into c until ctx ends, recording
// each in h, and returns with every node running and resumed. An error
// means a node could not be brought back (the run cannot be judged).
func RunNemesis(ctx context.Context, c Cluster, h *History, cfg NemesisConfig) error {
	cfg.setDefaults()
	for _, k := range cfg.Kinds {
		switch k {
		case NemesisKill, NemesisPause, NemesisPauseKill:
		case NemesisDiskFull:
			if _, ok := c.(DiskFiller); !ok {
				return fmt.Errorf("torture: nemesis %q needs a cluster whose disks can be filled", k)
			}
		case NemesisNetCut, NemesisNetBlackhole, NemesisNetSlow:
			if nf, ok := c.(NetworkFaulter); !ok || nf.Proxy(0) == nil {
				return fmt.Errorf("torture: nemesis %q needs a cluster with proxies in front of its nodes", k)
			}
		case NemesisPartitionIsolate, NemesisPartitionHalves, NemesisPartitionBridge:
			if _, ok := c.(Partitioner); !ok || c.Size() < 3 {
				return fmt.Errorf("torture: nemesis %q needs a cluster of at least 3 nodes whose links can be partitioned", k)
			}
		case NemesisDiskSlow:
			if _, ok := c.(DiskSlower); !ok {
				return fmt.Errorf("torture: nemesis %q needs a cluster whose disks can be slowed", k)
			}
		case NemesisClientCut, NemesisClientMute:
			if cfg.ClientNet == nil {
				return fmt.Errorf("torture: nemesis %q needs NemesisConfig.ClientNet (and the workload's)", k)
			}
		default:
			n, ok := hostileNemeses[k]
			if !ok {
				return fmt.Errorf("torture: unknown nemesis %q", k)
			}
			if err := n.check(c, cfg); err != nil {
				return err
			}
		}
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 5000))
	between := func() time.Duration {
		return cfg.Interval/2 + time.Duration(rng.Int64N(int64(cfg.Interval)+1))
	}
	down := func() time.Duration {
		return cfg.MinDown + time.Duration(rng.Int64N(int64(cfg.MaxDown-cfg.MinDown)+1))
	}
	for {
		sleep(ctx, between())
		if err := restartCrashed(c, h, cfg.Logf); err != nil || ctx.Err() != nil {
			return err
		}
		node := pickNode(ctx, c, cfg, rng)
		kind := cfg.Kinds[rng.IntN(len(cfg.Kinds))]
		d := down()
		var err error
		if other, ok := partner(kind, cfg, rng); ok {
			kind, err = injectTwo(ctx, c, h, cfg, kind, other, node, d)
		} else {
			err = inject(ctx, c, h, cfg, kind, node, d)
		}
		cfg.Logf("nemesis: %s node %d for %s: %v", kind, node, d.Round(time.Millisecond), err)
		if err == nil {
			err = restartCrashed(c, h, cfg.Logf)
		}
		if err != nil {
			return err
		}
	}
}

// processFault reports whether kind acts on the node's process (the others
// act on its network or disk).
func processFault(kind string) bool {
	return kind == NemesisKill || kind == NemesisPause || kind == NemesisPauseKill
}

// partner picks, when cfg.Combine says so this time, a fault of the other
// class than kind to run at the same time.
func partner(kind string, cfg NemesisConfig, rng *rand.Rand) (string, bool) {
	if _, alone := hostileNemeses[kind]; alone || !cfg.Combine || rng.IntN(2) == 0 {
		return "", false
	}
	// A node restarted on a full disk cannot open its store: disk-full
	// goes only with pause.
	restarts := func(k string) bool { return k == NemesisKill || k == NemesisPauseKill }
	var others []string
	for _, k := range cfg.Kinds {
		if _, alone := hostileNemeses[k]; alone || processFault(k) == processFault(kind) ||
			(k == NemesisDiskFull && restarts(kind)) || (kind == NemesisDiskFull && restarts(k)) {
			continue
		}
		others = append(others, k)
	}
	if len(others) == 0 {
		return "", false
	}
	return others[rng.IntN(len(others))], true
}

// inject runs one fault of kind on node for d (cut short when ctx ends) and
// undoes it.
func inject(ctx context.Context, c Cluster, h *History, cfg NemesisConfig, kind string, node int, d time.Duration) error {
	var err error
	switch kind {
	case NemesisKill:
		err = fault(h, "kill", node, func() error { return c.Kill(node) })
		if err == nil && cfg.WhileDown != nil {
			err = fault(h, "tamper", node, func() error { return cfg.WhileDown(node) })
		}
		if err == nil {
			sleep(ctx, d) // cut short when the run ends: still restart
			err = fault(h, "restart", node, func() error { return c.Restart(node) })
		}
	case NemesisPause:
		err = fault(h, "pause", node, func() error { return c.Pause(node) })
		if err == nil {
			sleep(ctx, d)
			err = fault(h, "resume", node, func() error { return c.Resume(node) })
		}
	case NemesisPauseKill:
		err = fault(h, "pause", node, func() error { return c.Pause(node) })
		if err == nil {
			sleep(ctx, d/2)
			err = fault(h, "kill", node, func() error { return c.Kill(node) })
		}
		if err == nil {
			sleep(ctx, d/2)
			err = fault(h, "restart", node, func() error { return c.Restart(node) })
		}
	case NemesisDiskFull:
		df := c.(DiskFiller)
		err = fault(h, "fill-disk", node, func() error { return df.FillDisk(node) })
		if err == nil {
			sleep(ctx, d)
			err = fault(h, "free-disk", node, func() error { return df.FreeDisk(node) })
		}
	case NemesisClientCut, NemesisClientMute:
		px := cfg.ClientNet.pick(rand.New(rand.NewPCG(uint64(d), uint64(node))))
		if px == nil {
			return nil
		}
		fault(h, kind, node, func() error {
			if kind == NemesisClientCut {
				px.Cut()
			} else {
				px.Mute()
			}
			return nil
		})
		sleep(ctx, d)
		fault(h, "client-heal", node, func() error { px.Heal(); return nil })
	case NemesisPartitionIsolate, NemesisPartitionHalves, NemesisPartitionBridge:
		err = partition(ctx, c.(Partitioner), c.Size(), h, kind, node, d)
	case NemesisDiskSlow:
		ds := c.(DiskSlower)
		slow := min(d/10, 500*time.Millisecond)
		err = fault(h, kind, node, func() error { return ds.SlowDisk(node, slow) }, "fsync +"+slow.String())
		sleep(ctx, d)
		if herr := fault(h, "disk-heal", node, func() error { return ds.SlowDisk(node, 0) }); err == nil {
			err = herr
		}
	case NemesisNetCut, NemesisNetBlackhole, NemesisNetSlow:
		err = netFault(ctx, c, h, kind, node, d)
	default:
		err = hostileNemeses[kind].inject(ctx, c, h, cfg, node, d)
	}
	return err
}

// partition splits c's nodes as kind says around node for d, then heals.
func partition(ctx context.Context, c Partitioner, n int, h *History, kind string, node int, d time.Duration) error {
	rng := rand.New(rand.NewPCG(uint64(d), uint64(node)+7))
	others := rng.Perm(n)
	var s Split
	switch kind {
	case NemesisPartitionIsolate:
		s = Isolate(n, node)
	case NemesisPartitionHalves:
		s = Halves(n, node, others)
	default:
		s = Bridge(n, node, others)
	}
	blackhole := rng.IntN(2) == 0
	how := "reset"
	if blackhole {
		how = "blackhole"
	}
	fault(h, kind, node, func() error { c.Partition(s, blackhole); return nil }, s.Desc+", "+how)
	sleep(ctx, d)
	fault(h, "partition-heal", node, func() error { c.HealPartition(); return nil })
	return nil
}

// fault runs one nemesis action and records it, with an optional detail.
func fault(h *History, kind string, node int, do func() error, detail ...string) error {
	f := Fault{Kind: kind, Node: node, Start: h.Now(), Detail: strings.Join(detail, " ")}
	err := do()
	f.End = h.Now()
	if err != nil {
		f.Err = err.Error()
	}
	h.AddFault(f)
	return err
}

// injectTwo runs two faults at once on node, a process fault and one of
// its environment (kind and other, in either order), and returns the
// pair's name.
func injectTwo(ctx context.Context, c Cluster, h *History, cfg NemesisConfig, kind, other string, node int, d time.Duration) (string, error) {
	// The network or disk fault first; the process fault a third of the
	// way into it. The process fault lasts a third too, so the node is
	// back while the other fault still holds: retries reach the restarted
	// node within the producers' delivery timeout.
	proc, env := kind, other
	if !processFault(proc) {
		proc, env = env, proc
	}
	errs := make(chan error, 1)
	go func() { errs <- inject(ctx, c, h, cfg, env, node, d) }()
	sleep(ctx, d/3)
	perr := inject(ctx, c, h, cfg, proc, node, d/3)
	if perr != nil && exitedOnFullDisk(c, node) {
		// Documented (broker.ExitDiskFull): the disk fault made the node
		// exit before the process fault reached it; restartCrashed
		// records it and restarts the node.
		cfg.Logf("nemesis: %s node %d: the node had exited on the full disk: %v", proc, node, perr)
		perr = nil
	}
	return env + "+" + proc, errors.Join(perr, <-errs)
}

// exitedOnFullDisk reports whether node's process has exited with
// broker.ExitDiskFull.
func exitedOnFullDisk(c Cluster, node int) bool {
	w, ok := c.(ProcessWatcher)
	e, ok2 := c.(interface{ ExitCode(int) int })
	return ok && ok2 && !w.Running(node) && e.ExitCode(node) == broker.ExitDiskFull
}

// restartCrashed restarts every node whose process died on its own,
// recording a "crashed" fault for each: a node must survive every fault the
// nemeses inject, so the report counts these.
func restartCrashed(c Cluster, h *History, logf func(string, ...any)) error {
	w, ok := c.(ProcessWatcher)
	if !ok {
		return nil
	}
	for node := range c.Size() {
		if w.Running(node) {
			continue
		}
		now := h.Now()
		if e, ok := c.(interface{ ExitCode(int) int }); ok && e.ExitCode(node) == broker.ExitDiskFull {
			// Documented (broker.ExitDiskFull): the fill-disk nemesis took
			// the space logd keeps for its metadata store.
			h.AddFault(Fault{Kind: "disk-full-exit", Node: node, Start: now, End: now,
				Err: "the node exited: its metadata store could not write to the full disk"})
			logf("nemesis: node %d exited on the full disk; restarting it", node)
		} else {
			h.AddFault(Fault{Kind: "crashed", Node: node, Start: now, End: now, Err: "the node's process exited on its own"})
			logf("nemesis: node %d exited on its own; restarting it", node)
		}
		if err := fault(h, "restart", node, func() error { return c.Restart(node) }); err != nil {
			return err
		}
	}
	return nil
}

// KafkaFaulter is a NetworkFaulter whose nodes' Kafka listeners have a
// proxy of their own: the network nemeses fault it together with the
// node's API proxy.
type KafkaFaulter interface {
	KafkaProxy(node int) *Proxy
}

// nodeProxies are the proxies of the clients' connections to node: its API
// proxy and, when there is one, its Kafka proxy.
func nodeProxies(c Cluster, node int) []*Proxy {
	pxs := []*Proxy{c.(NetworkFaulter).Proxy(node)}
	if kf, ok := c.(KafkaFaulter); ok {
		if px := kf.KafkaProxy(node); px != nil {
			pxs = append(pxs, px)
		}
	}
	return pxs
}

// netFault cuts, blackholes or slows the clients' connections to node for
// d (both its API and its Kafka proxy), then heals them.
func netFault(ctx context.Context, c Cluster, h *History, kind string, node int, d time.Duration) error {
	pxs := nodeProxies(c, node)
	err := fault(h, kind, node, func() error {
		for _, px := range pxs {
			switch kind {
			case NemesisNetCut:
				px.Cut()
			case NemesisNetBlackhole:
				px.Blackhole()
			default:
				px.Delay(d / 10)
			}
		}
		return nil
	})
	sleep(ctx, d)
	fault(h, "net-heal", node, func() error {
		for _, px := range pxs {
			px.Heal()
		}
		return nil
	})
	return err
}
