package cluster

import (
	"sync"
	"testing"

	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
)

func TestGroupNames(t *testing.T) {
	var g groupNames
	a := partition.DefaultConfig("a")
	a.Partitions, a.CreatedMs = 3, 100
	for p := range int32(3) {
		if got, want := g.of(a, p), meta.GroupOf(a, p); got != want {
			t.Errorf("of(a, %d) = %q, want %q", p, got, want)
		}
	}
	held := g.topic(a, 3)
	a.Partitions = 5 // partitions added
	names := g.topic(a, 5)
	for p := range int32(5) {
		if want := meta.GroupOf(a, p); names[p] != want {
			t.Errorf("after growing, name %d = %q, want %q", p, names[p], want)
		}
	}
	for p, name := range held {
		if want := meta.GroupOf(a, int32(p)); name != want {
			t.Errorf("a slice handed out before the growth changed: %d = %q, want %q", p, name, want)
		}
	}
	for _, p := range []int32{-1, 5, 1 << 30} { // outside the topic: named, not cached
		if got, want := g.of(a, p), meta.GroupOf(a, p); got != want {
			t.Errorf("of(a, %d) = %q, want %q", p, got, want)
		}
	}
	if n := len(g.topic(a, 0)); n != 5 {
		t.Errorf("%d names cached for a, want 5 (none for partitions outside it)", n)
	}

	// A new incarnation of a has other names; keep drops the one the
	// metadata no longer has, and any topic it does not have.
	b := partition.DefaultConfig("b")
	b.Partitions, b.CreatedMs = 1, 100
	g.of(b, 0)
	a2 := a
	a2.CreatedMs = 200
	if g.of(a2, 0) == g.of(a, 0) {
		t.Fatalf("two incarnations of a share the name %q", g.of(a, 0))
	}
	g.keep(meta.State{Topics: map[string]meta.Topic{"a": {Config: a2}}})
	if len(g.m) != 1 || g.m[topicIncarnation{"a", 200}] == nil {
		t.Errorf("after keep, cached %v; want only a@200", g.m)
	}
}

// Readers of names handed out race with the growth of their topic's
// slice (partitions added): under -race this checks that a growth never
// writes what a reader may read.
func TestGroupNamesConcurrent(t *testing.T) {
	var g groupNames
	cfg := partition.DefaultConfig("a")
	cfg.CreatedMs = 1
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				c := cfg
				c.Partitions = int32(1 + (i*(r+1))%64)
				names := g.topic(c, int(c.Partitions))
				p := int32(i % int(c.Partitions))
				if names[p] != meta.GroupOf(c, p) || g.of(c, p) != names[p] {
					t.Errorf("name of partition %d: %q", p, names[p])
					return
				}
			}
		})
	}
	wg.Wait()
}
