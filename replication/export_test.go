package replication

import (
	"context"
	"time"
)

// SetStagedHook makes every catch-up call h after each segment it staged,
// until the test ends.
func SetStagedHook(t interface{ Cleanup(func()) }, h func(ctx context.Context, staged int)) {
	stagedHook.Store(&h)
	t.Cleanup(func() { stagedHook.Store(nil) })
}

// RunningHeartbeatTimeout is the HeartbeatTimeout p's Raft instance runs
// with now.
func (p *Partition) RunningHeartbeatTimeout() time.Duration {
	return p.r().ReloadableConfig().HeartbeatTimeout
}
