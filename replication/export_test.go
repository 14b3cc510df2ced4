package replication

import "context"

// SetStagedHook makes every catch-up call h after each segment it staged,
// until the test ends.
func SetStagedHook(t interface{ Cleanup(func()) }, h func(ctx context.Context, staged int)) {
	stagedHook.Store(&h)
	t.Cleanup(func() { stagedHook.Store(nil) })
}
