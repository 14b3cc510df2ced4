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

// TransferWait is how long p.TransferLeadership waits for Raft's answer.
func TransferWait(p *Partition) time.Duration { return p.transferWait() }
