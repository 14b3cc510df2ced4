package torture

import (
	"context"
	"fmt"
	"time"

	"github.com/logd/logd/internal/logdbin"
)

// Cluster is what the workload and the nemeses need of the system under
// test: the nodes' API addresses, and crashing, restarting, pausing and
// resuming a node. A node keeps its address across restarts, so clients
// dialled before a crash reach the restarted node.
type Cluster interface {
	// Size is the number of nodes, numbered from 0.
	Size() int
	// Addr is node's gRPC API address ("host:port").
	Addr(node int) string
	// Kill stops node at once (SIGKILL), losing whatever it had not made
	// durable.
	Kill(node int) error
	// Restart starts a killed node again on its data and returns once it
	// serves.
	Restart(node int) error
	// Pause freezes node (SIGSTOP): connections stay open, nothing answers.
	Pause(node int) error
	// Resume unfreezes a paused node (SIGCONT).
	Resume(node int) error
	// Close stops every process the cluster started.
	Close() error
}

// DiskFiller is a Cluster whose nodes' disks can be filled (writes fail with
// ENOSPC) and freed again: the disk-full nemesis needs it.
type DiskFiller interface {
	FillDisk(node int) error
	FreeDisk(node int) error
}

// NetworkFaulter is a Cluster whose clients' connections to a node can be
// cut, blackholed or slowed (see Proxy): the network nemeses need it.
type NetworkFaulter interface {
	Proxy(node int) *Proxy
}

// Partitioner is a Cluster whose nodes' links to each other (their Raft
// traffic) can be partitioned (see RaftMesh): the partition nemeses need
// it.
type Partitioner interface {
	// Partition applies s, replacing the previous partition; blackhole
	// holds the cut links' bytes rather than resetting the connections.
	Partition(s Split, blackhole bool)
	HealPartition()
}

// DiskSlower is a Cluster whose nodes' fsyncs can be slowed: the disk-slow
// nemesis needs it.
type DiskSlower interface {
	// SlowDisk delays every fsync of node's logs by d; 0 ends it.
	SlowDisk(node int, d time.Duration) error
}

// ProcessWatcher is a Cluster that can tell whether a node's process is
// alive: after each fault the nemesis restarts a node that died on its own
// (recorded as a "crashed" fault).
type ProcessWatcher interface {
	Running(node int) bool
}

// BuildLogd builds cmd/logd into dir and returns the binary's path. It runs
// `go build` in the module that contains this package.
func BuildLogd(ctx context.Context, dir string) (string, error) {
	bin, err := logdbin.Build(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("torture: %w", err)
	}
	return bin, nil
}
