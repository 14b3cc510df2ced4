package torture

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/broker"
)

// exitingCluster is a fake cluster whose nodes exit with
// broker.ExitDiskFull as soon as their disk is filled, as a node whose
// metadata store's write hit the full disk does.
type exitingCluster struct {
	mu      sync.Mutex
	running [3]bool
}

func newExitingCluster() *exitingCluster {
	return &exitingCluster{running: [3]bool{true, true, true}}
}

func (c *exitingCluster) Size() int          { return 3 }
func (c *exitingCluster) Addr(int) string    { return "" }
func (c *exitingCluster) Close() error       { return nil }
func (c *exitingCluster) FreeDisk(int) error { return nil }
func (c *exitingCluster) Kill(node int) error {
	return c.set(node, false)
}
func (c *exitingCluster) Restart(node int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[node] = true
	return nil
}
func (c *exitingCluster) Pause(node int) error  { return c.must(node) }
func (c *exitingCluster) Resume(node int) error { return c.must(node) }
func (c *exitingCluster) FillDisk(node int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[node] = false
	return nil
}
func (c *exitingCluster) Running(node int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running[node]
}
func (c *exitingCluster) ExitCode(int) int { return broker.ExitDiskFull }

func (c *exitingCluster) set(node int, running bool) error {
	if err := c.must(node); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[node] = running
	return nil
}

func (c *exitingCluster) must(node int) error {
	if !c.Running(node) {
		return errors.New("torture: node not running")
	}
	return nil
}

// A pause combined with a disk-full fault that finds the node exited on
// the full disk (documented: broker.ExitDiskFull) is not a harness
// failure: the node is restarted and recorded as a disk-full exit. Seed
// 11 (200 partitions, hibernation) ended INVALID on "pause node 1: not
// running" when the pause came after such an exit.
func TestPauseAfterADiskFullExit(t *testing.T) {
	c := newExitingCluster()
	h := NewHistory()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := RunNemesis(ctx, c, h, NemesisConfig{
		Kinds: []string{NemesisDiskFull, NemesisPause}, Combine: true, Seed: 11,
		Interval: 20 * time.Millisecond, MinDown: 30 * time.Millisecond, MaxDown: 60 * time.Millisecond,
		Logf: t.Logf,
	})
	if err != nil {
		t.Fatalf("RunNemesis: %v", err)
	}
	var kinds []string
	for _, f := range h.Faults() {
		kinds = append(kinds, f.Kind)
	}
	if !slices.Contains(kinds, "disk-full-exit") || !slices.Contains(kinds, "pause") {
		t.Fatalf("faults %v: want a pause after a disk-full exit", kinds)
	}
}
