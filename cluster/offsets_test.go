package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/logd/logd/offsets"
)

// Committed offsets and group generations are the metadata group's: a
// commit on the metadata leader is stored on every node, a generation
// not above the recorded one is refused as taken, and deleting a group's
// offsets or the topic removes them everywhere.
func TestCommittedOffsets(t *testing.T) {
	h := newHarness(t, 3, nil)
	h.createTopic(topicConfig("t", 2, 3))
	h.createTopic(topicConfig("u", 1, 3))
	ctx := context.Background()
	commit := func(group string, cs ...offsets.Committed) {
		t.Helper()
		if err := h.onMetaLeader(func(c *Cluster) error { return c.CommitOffsets(ctx, group, cs) }); err != nil {
			t.Fatalf("commit %s: %v", group, err)
		}
	}
	commit("g", offsets.Committed{Topic: "t", Partition: 0, Offset: 5, Metadata: "m"}, offsets.Committed{Topic: "t", Partition: 1, Offset: 7})
	commit("g", offsets.Committed{Topic: "u", Partition: 0, Offset: 2})
	commit("h", offsets.Committed{Topic: "t", Partition: 0, Offset: 9})
	everywhere := func(what string, cond func(*offsets.Store) (bool, string)) {
		t.Helper()
		h.eventually(what, func() (bool, string) {
			for _, nd := range h.running() {
				if ok, saw := cond(nd.cl().Offsets()); !ok {
					return false, nd.id + ": " + saw
				}
			}
			return true, ""
		})
	}
	offsetOf := func(s *offsets.Store, group, topic string, p int32) (int64, bool) {
		c, ok, err := s.Get(group, topic, p)
		return c.Offset, ok && err == nil
	}
	everywhere("the commits on every node", func(s *offsets.Store) (bool, string) {
		a, _ := offsetOf(s, "g", "t", 0)
		b, _ := offsetOf(s, "g", "t", 1)
		c, _ := offsetOf(s, "g", "u", 0)
		d, _ := offsetOf(s, "h", "t", 0)
		return a == 5 && b == 7 && c == 2 && d == 9, fmt.Sprint(a, b, c, d)
	})

	if err := h.onMetaLeader(func(c *Cluster) error { return c.RecordGeneration(ctx, "g", 5) }); err != nil {
		t.Fatal(err)
	}
	for _, gen := range []int32{5, 3} {
		err := h.onMetaLeader(func(c *Cluster) error { return c.RecordGeneration(ctx, "g", gen) })
		if !errors.Is(err, offsets.ErrGenerationTaken) {
			t.Errorf("generation %d after 5: %v, want ErrGenerationTaken", gen, err)
		}
	}
	everywhere("generation 5 on every node", func(s *offsets.Store) (bool, string) {
		g, err := s.Generation("g")
		return g == 5 && err == nil, fmt.Sprint(g, err)
	})

	if err := h.onMetaLeader(func(c *Cluster) error { return c.DeleteGroupOffsets(ctx, "h") }); err != nil {
		t.Fatal(err)
	}
	if err := h.onMetaLeader(func(c *Cluster) error { return c.DeleteTopic(ctx, "u") }); err != nil {
		t.Fatal(err)
	}
	everywhere("group h's offsets and topic u's gone, the rest kept", func(s *offsets.Store) (bool, string) {
		_, hKept := offsetOf(s, "h", "t", 0)
		_, uKept := offsetOf(s, "g", "u", 0)
		a, _ := offsetOf(s, "g", "t", 0)
		return !hKept && !uKept && a == 5, fmt.Sprint(hKept, uKept, a)
	})
}
