package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// topicParts is a set of partitions by topic, each list ascending; a topic
// without partitions has no entry.
type topicParts map[string][]int32

func (tp topicParts) clone() map[string][]int32 {
	out := make(map[string][]int32, len(tp))
	for t, ps := range tp {
		out[t] = slices.Clone(ps)
	}
	return out
}

func (tp topicParts) empty() bool { return len(tp) == 0 }

// minus returns the partitions of tp not in other.
func (tp topicParts) minus(other topicParts) topicParts {
	out := topicParts{}
	for t, ps := range tp {
		if d := minus(ps, other[t]); len(d) > 0 {
			out[t] = d
		}
	}
	return out
}

// union returns the partitions of tp or other.
func (tp topicParts) union(other topicParts) topicParts {
	out := topicParts(tp.clone())
	for t, ps := range other.minus(tp) {
		out[t] = append(out[t], ps...)
		slices.Sort(out[t])
	}
	return out
}

// intersect returns the partitions of tp also in other.
func (tp topicParts) intersect(other topicParts) topicParts {
	return tp.minus(tp.minus(other))
}

// subscribedTopics checks opts' topics: Topic, then Topics, without
// repeats.
func subscribedTopics(opts GroupConsumerOptions) ([]string, error) {
	if opts.Group == "" {
		return nil, errors.New("group consumer: give a group and a topic")
	}
	var topics []string
	for _, t := range append([]string{opts.Topic}, opts.Topics...) {
		if t != "" && !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		return nil, fmt.Errorf("group consumer: give group %q at least one topic", opts.Group)
	}
	return topics, nil
}

// assigned announces parts the member starts reading.
func (g *GroupConsumer) assigned(parts topicParts) {
	if ps := parts[g.topics[0]]; len(ps) > 0 && g.opts.OnAssigned != nil {
		g.opts.OnAssigned(slices.Clone(ps))
	}
	if g.opts.OnAssignedTopics != nil {
		g.opts.OnAssignedTopics(parts.clone())
	}
}

// revoked announces parts the member stopped reading.
func (g *GroupConsumer) revoked(parts topicParts) {
	if ps := parts[g.topics[0]]; len(ps) > 0 && g.opts.OnRevoked != nil {
		g.opts.OnRevoked(slices.Clone(ps))
	}
	if g.opts.OnRevokedTopics != nil {
		g.opts.OnRevokedTopics(parts.clone())
	}
}

// pollTopics polls every topic's consumer at once and returns the records
// of those that had some, or the first error when none had. The first
// consumer to answer ends the others' polls (what they did not return
// stays for the next Poll), and so does the heartbeat asking for a
// re-join: a member blocked on a partition that cannot be read (its topic
// deleted, say) still follows the rebalance that takes it away. A
// subscribed topic that was deleted (ErrTopicNotFound) reads as empty
// until then.
func (g *GroupConsumer) pollTopics(ctx context.Context) ([]ConsumedRecord, error) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan struct{})
	defer func() { cancel(); <-watched }()
	go func() {
		defer close(watched)
		select {
		case <-g.wake:
			cancel()
		case <-pctx.Done():
		}
	}()
	type result struct {
		recs []ConsumedRecord
		err  error
	}
	results := make(chan result, len(g.cons))
	for _, t := range slices.Sorted(maps.Keys(g.cons)) {
		cons := g.cons[t]
		go func() {
			recs, err := cons.Poll(pctx)
			results <- result{recs, err}
		}()
	}
	var recs []ConsumedRecord
	var firstErr error
	for range len(g.cons) {
		r := <-results
		switch {
		case r.err == nil:
			recs = append(recs, r.recs...)
		case errors.Is(wrapStatus(r.err), ErrTopicNotFound):
		case errors.Is(r.err, context.Canceled) && ctx.Err() == nil:
			// Ended by a sibling or the heartbeat: nothing was taken.
		case firstErr == nil:
			firstErr = r.err
		}
		cancel()
	}
	if len(recs) > 0 || firstErr == nil {
		return recs, nil
	}
	return nil, firstErr
}
