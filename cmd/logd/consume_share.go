package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

// The share-group read of logd consume (--share GROUP): the process is a
// member of the share group, each record it prints is accepted once its
// line is written (docs/queues.md).

const consumeShareLong = `

With --share GROUP the process is a member of the share group GROUP
(docs/queues.md): any number of members read TOPIC, each record goes to one
of them, and a record is accepted once its line is written out. It stops
when a fetch waits --max-wait without a record, or after --count records;
with --follow it keeps waiting. If writing the output fails (a closed pipe,
a full disk), the records not written are not accepted: with
--release-on-error they are released at once, so another member gets them
now; without it they stay locked to this member until their lock expires
(share.record.lock.duration.ms), then are delivered again.`

// shareConsume runs logd consume --share.
func shareConsume(ctx context.Context, c *client.Client, topics []string, fl consumeFlags, pr printer, stdout io.Writer) error {
	if len(topics) != 1 || fl.from != "" || fl.until != "" || fl.tail != 0 || fl.group != "" || fl.commit {
		return errors.New("--share reads one TOPIC as a share group member: it excludes --group, --commit, --from, --until and --tail")
	}
	sc, err := c.ShareConsumer(fl.share, topics[0])
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(stdout, 64<<10)
	printed := 0
	for fl.count == 0 || printed < fl.count {
		max := 500
		if fl.count > 0 {
			max = fl.count - printed
		}
		recs, err := sc.Poll(ctx, max, fl.maxWait)
		if err != nil {
			if ctx.Err() != nil {
				return sc.Close(context.Background())
			}
			return errors.Join(err, sc.Close(context.Background()))
		}
		if len(recs) == 0 && !fl.follow {
			break
		}
		if err := printShared(sc, recs, pr, out, fl.releaseOnError); err != nil {
			if fl.releaseOnError {
				return errors.Join(err, sc.Close(context.Background()))
			}
			return err // the records not written stay locked until their locks expire
		}
		printed += len(recs)
	}
	return sc.Close(context.Background())
}

// printShared prints recs and accepts them once written; on a write error
// it releases the ones not written when release is set.
func printShared(sc *client.ShareConsumer, recs []client.ShareRecord, pr printer, out *bufio.Writer, release bool) error {
	for i, r := range recs {
		err := pr(out, r.ConsumedRecord)
		if err == nil {
			err = out.Flush()
		}
		if err != nil {
			if release {
				for _, rest := range recs[i:] {
					_ = sc.Release(rest) // each is held: Release cannot fail here
				}
			}
			return fmt.Errorf("writing the output: %w", err)
		}
		if err := sc.Ack(r); err != nil {
			return err
		}
	}
	return nil
}

// addShareFlags adds consume's share-group flags.
func addShareFlags(cmd *cobra.Command, fl *consumeFlags) {
	cmd.Long += consumeShareLong
	cmd.Flags().StringVar(&fl.share, "share", "", "read as a member of this share group: each record goes to one member and is accepted once printed")
	cmd.Flags().BoolVar(&fl.releaseOnError, "release-on-error", false, "with --share: release the records not written when the output fails, so another member gets them at once")
}
