package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/logd/logd/client"
)

// recordReader is what consume reads from: a Consumer (the partitions it
// names, or all) or a GroupConsumer (the partitions the group gives it).
type recordReader interface {
	Poll(ctx context.Context) ([]client.ConsumedRecord, error)
	SeekPartition(ctx context.Context, p int32, pos client.Position) error
	CommitOffsets(ctx context.Context, offsets map[int32]int64) error
	Close() error
}

// open starts the reader: a group member when join is set (--group with
// --follow, no --partition), else a plain consumer.
func (fl *consumeFlags) open(ctx context.Context, c *client.Client, opts client.ConsumerOptions, join bool) (recordReader, error) {
	if !join {
		return c.NewConsumer(ctx, opts)
	}
	host, _ := os.Hostname()
	clientID := "logd-consume"
	if host != "" {
		clientID += "@" + host
	}
	return c.NewGroupConsumer(ctx, client.GroupConsumerOptions{
		Group: opts.Group, Topic: opts.Topic, Start: opts.Start, Assignor: fl.assignor,
		SessionTimeout: fl.session, ClientID: clientID, MaxWait: opts.MaxWait,
	})
}

// unread moves partitions back to the first of recs they hold, so records
// returned but not printed are printed by the next reader.
func unread(ctx context.Context, cons recordReader, recs []client.ConsumedRecord) error {
	first := make(map[int32]int64)
	for _, r := range recs {
		if off, ok := first[r.Partition]; !ok || r.Offset < off {
			first[r.Partition] = r.Offset
		}
	}
	for p, off := range first {
		if err := cons.SeekPartition(ctx, p, client.AtOffset(off)); err != nil {
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
