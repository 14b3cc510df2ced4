package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/logd/logd/client"
)

// recordReader is what consume reads from: a Consumer (the partitions it
// names, or all, of one topic) or a GroupConsumer (the partitions the group
// gives it, of one topic or several).
type recordReader interface {
	Poll(ctx context.Context) ([]client.ConsumedRecord, error)
	SeekTopicPartition(ctx context.Context, topic string, p int32, pos client.Position) error
	CommitTopicOffsets(ctx context.Context, offsets map[string]map[int32]int64) error
	Close() error
}

// topicReader is a Consumer of one topic as a recordReader.
type topicReader struct{ *client.Consumer }

func (r topicReader) SeekTopicPartition(ctx context.Context, _ string, p int32, pos client.Position) error {
	return r.SeekPartition(ctx, p, pos)
}

func (r topicReader) CommitTopicOffsets(ctx context.Context, offsets map[string]map[int32]int64) error {
	for _, offs := range offsets { // one topic
		if err := r.CommitOffsets(ctx, offs); err != nil {
			return err
		}
	}
	return nil
}

// open starts the reader: a group member of topics when join is set
// (--group with --follow, no --partition), else a plain consumer of
// opts.Topic.
func (fl *consumeFlags) open(ctx context.Context, c *client.Client, opts client.ConsumerOptions, topics []string, join bool) (recordReader, error) {
	if !join {
		cons, err := c.NewConsumer(ctx, opts)
		if err != nil {
			return nil, err
		}
		return topicReader{cons}, nil
	}
	host, _ := os.Hostname()
	clientID := "logd-consume"
	if host != "" {
		clientID += "@" + host
	}
	return c.NewGroupConsumer(ctx, client.GroupConsumerOptions{
		Group: opts.Group, Topics: topics, Start: opts.Start, Assignor: fl.assignor,
		SessionTimeout: fl.session, ClientID: clientID, MaxWait: opts.MaxWait,
		Isolation: opts.Isolation,
	})
}

// unread moves partitions back to the first of recs they hold, so records
// returned but not printed are printed by the next reader.
func unread(ctx context.Context, cons recordReader, recs []client.ConsumedRecord) error {
	type tp struct {
		topic string
		p     int32
	}
	first := make(map[tp]int64)
	for _, r := range recs {
		k := tp{r.Topic, r.Partition}
		if off, ok := first[k]; !ok || r.Offset < off {
			first[k] = r.Offset
		}
	}
	for k, off := range first {
		if err := cons.SeekTopicPartition(ctx, k.topic, k.p, client.AtOffset(off)); err != nil {
			return err
		}
	}
	return nil
}

// fencedMember reports a group member's commit refused because the group
// moved on without it (it was paused past its session timeout, say): its
// partitions may be another member's now, so the records it printed since
// its last commit will be printed again there. The member re-joins at its
// next poll; consume goes on.
func fencedMember(cons recordReader, err error, stderr io.Writer) bool {
	if _, ok := cons.(*client.GroupConsumer); !ok {
		return false
	}
	if !errors.Is(err, client.ErrUnknownMember) && !errors.Is(err, client.ErrIllegalGeneration) && !errors.Is(err, client.ErrRebalanceInProgress) {
		return false
	}
	fmt.Fprintf(stderr, "logd: the group refused this member's commit (%v): re-joining; its partitions may have moved to another member\n", err)
	return true
}

// autoCommit is a group member's commit of what it printed every
// --auto-commit-interval (Kafka's enable.auto.commit), so the group's
// committed offsets and lag follow the member while it runs. Not with
// --commit, which commits after every record printed.
type autoCommit struct {
	g      *client.GroupConsumer
	every  time.Duration
	last   time.Time
	stderr io.Writer
}

// newAutoCommit is nil (commits nothing) but for a group member without
// --commit and with a positive interval.
func newAutoCommit(cons recordReader, fl consumeFlags, stderr io.Writer) *autoCommit {
	g, ok := cons.(*client.GroupConsumer)
	if !ok || fl.commit || fl.autoCommit <= 0 {
		return nil
	}
	return &autoCommit{g: g, every: fl.autoCommit, last: time.Now(), stderr: stderr}
}

// due commits the member's positions (each just past the last record it
// printed) when the interval has passed. A failed commit is said on
// stderr and consume goes on, as Kafka's auto commit does: the member
// commits again at the next interval, at a rebalance and when it stops.
func (a *autoCommit) due(ctx context.Context) {
	if a == nil || time.Since(a.last) < a.every {
		return
	}
	a.last = time.Now()
	// Bounded, and not cut short by an interrupt: these records were printed.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.every)
	defer cancel()
	if err := a.g.Commit(cctx); err != nil && !fencedMember(a.g, err, a.stderr) {
		fmt.Fprintf(a.stderr, "logd: auto commit failed (%v): committing again in %s\n", err, a.every)
	}
}
