package torture

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/logd/logd/proto/logd/v1"
)

// Nemeses of hostile clients and of a node's environment at restart.
// Each runs alone, never combined with another fault.
const (
	// NemesisSubscriberFlood opens floodStreams Subscribe streams to a
	// node, from offset 0 of every partition of the workload's topic with
	// the largest messages, that never read, and holds them for the
	// fault's length: the node must go on serving the workload (a slow
	// reader costs only its own stream). A Fetch made during the flood is
	// timed in the fault's detail.
	NemesisSubscriberFlood = "subscriber-flood"
	// NemesisDiskFullRestart fills a node's disk, kills the node while it
	// is full, restarts it on the full disk (it must start: reads work,
	// appends are refused), then frees the disk. The Cluster must be a
	// DiskFiller.
	NemesisDiskFullRestart = "disk-full-restart"
)

const (
	floodStreams     = 200
	floodConnections = 20
)

// hostileNemesis is a nemesis that runs alone: how to check a cluster can
// take it, and how to inject it.
type hostileNemesis struct {
	check  func(c Cluster, cfg NemesisConfig) error
	inject func(ctx context.Context, c Cluster, h *History, cfg NemesisConfig, node int, d time.Duration) error
}

// hostileNemeses are the nemeses that run alone (this file's, and
// NemesisForeignDataDir).
var hostileNemeses = map[string]hostileNemesis{
	NemesisSubscriberFlood: {
		check: func(c Cluster, cfg NemesisConfig) error { return nil },
		inject: func(ctx context.Context, c Cluster, h *History, cfg NemesisConfig, node int, d time.Duration) error {
			return subscriberFlood(ctx, c, h, cfg, node, d)
		},
	},
	NemesisDiskFullRestart: {
		check: func(c Cluster, cfg NemesisConfig) error {
			if _, ok := c.(DiskFiller); !ok {
				return fmt.Errorf("torture: nemesis %q needs a cluster whose disks can be filled", NemesisDiskFullRestart)
			}
			return nil
		},
		inject: diskFullRestart,
	},
}

// subscriberFlood runs NemesisSubscriberFlood.
func subscriberFlood(ctx context.Context, c Cluster, h *History, cfg NemesisConfig, node int, d time.Duration) error {
	if cfg.Topic == "" || cfg.Partitions <= 0 {
		return nil
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var conns []*grpc.ClientConn
	defer func() {
		for _, cc := range conns {
			cc.Close()
		}
	}()
	opened := 0
	detail := func() string {
		return fmt.Sprintf("%d non-reading subscribers on %d connections", opened, len(conns))
	}
	err := fault(h, NemesisSubscriberFlood, node, func() error {
		for i := range floodStreams {
			if i%(floodStreams/floodConnections) == 0 {
				cc, err := grpc.NewClient(c.Addr(node), grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					return err
				}
				conns = append(conns, cc)
			}
			req := &pb.SubscribeRequest{Topic: cfg.Topic, Partition: int32(i) % cfg.Partitions, MaxBytes: 4 << 20}
			// The stream is never read; the node may refuse it (a
			// follower, a node restarting): the flood is what it can open.
			if _, err := pb.NewLogClient(conns[len(conns)-1]).Subscribe(fctx, req); err == nil {
				opened++
			}
		}
		return nil
	}, fmt.Sprintf("%d streams asked for", floodStreams))
	if err != nil {
		return err
	}
	sleep(ctx, d/2)
	fault(h, "flood-fetch", node, func() error { return nil }, timedFetch(ctx, c, cfg, node))
	sleep(ctx, d/2)
	cancel()
	fault(h, "flood-end", node, func() error { return nil }, detail())
	return nil
}

// timedFetch makes one Fetch of the workload's topic on node and says how
// long it took, or how it failed.
func timedFetch(ctx context.Context, c Cluster, cfg NemesisConfig, node int) string {
	cc, err := grpc.NewClient(c.Addr(node), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "fetch: " + err.Error()
	}
	defer cc.Close()
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// A partition the node leads, if any: others answer with a redirect.
	var took time.Duration
	for p := range cfg.Partitions {
		start := time.Now()
		_, err = pb.NewLogClient(cc).Fetch(fctx, &pb.FetchRequest{Topic: cfg.Topic, Partition: p, MaxBytes: 64 << 10})
		took = time.Since(start).Round(time.Millisecond)
		if status.Code(err) != codes.Unavailable {
			break
		}
	}
	if err != nil {
		return fmt.Sprintf("a Fetch during the flood failed after %s: %v", took, err)
	}
	return fmt.Sprintf("a Fetch during the flood answered in %s", took)
}

// diskFullRestart runs NemesisDiskFullRestart: the restart on the full disk
// must succeed, or the run cannot go on.
func diskFullRestart(ctx context.Context, c Cluster, h *History, cfg NemesisConfig, node int, d time.Duration) error {
	df := c.(DiskFiller)
	err := fault(h, "fill-disk", node, func() error { return df.FillDisk(node) })
	if err == nil {
		sleep(ctx, d/3)
		err = fault(h, "kill", node, func() error { return c.Kill(node) })
	}
	if err == nil {
		sleep(ctx, d/3)
		err = fault(h, "restart", node, func() error { return c.Restart(node) }, "on the full disk")
	}
	if err == nil {
		sleep(ctx, d/3)
	}
	if ferr := fault(h, "free-disk", node, func() error { return df.FreeDisk(node) }); err == nil {
		err = ferr
	}
	return err
}
