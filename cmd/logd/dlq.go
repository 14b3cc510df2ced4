package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

// The dead-letter headers a share group writes (broker.DLQHeader*).
const (
	dlqTopic     = "logd.dlq.topic"
	dlqPartition = "logd.dlq.partition"
	dlqOffset    = "logd.dlq.offset"
	dlqGroup     = "logd.dlq.group"
	dlqCount     = "logd.dlq.delivery.count"
	dlqError     = "logd.dlq.error"
)

func newDLQCmd() *cobra.Command {
	var srv serverFlag
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Inspect and purge a share group's dead-letter topic (docs/queues.md)",
	}
	srv.register(cmd, true)
	cmd.AddCommand(newDLQListCmd(&srv), newDLQRedriveCmd(&srv), newDLQPurgeCmd(&srv))
	return cmd
}

// dlqFilter selects dead letters: an offset range and header matches.
type dlqFilter struct {
	from, to int64 // [from, to); to -1: no bound
	headers  map[string]string
}

func (f dlqFilter) match(r client.ConsumedRecord) bool {
	if r.Offset < f.from || (f.to >= 0 && r.Offset >= f.to) {
		return false
	}
	for k, v := range f.headers {
		if dlqHeader(r, k) != v {
			return false
		}
	}
	return true
}

func dlqHeader(r client.ConsumedRecord, k string) string {
	for _, h := range r.Headers {
		if h.Key == k {
			return string(h.Value)
		}
	}
	return ""
}

func parseDLQFilter(from, to int64, headers []string) (dlqFilter, error) {
	f := dlqFilter{from: from, to: to, headers: map[string]string{}}
	if from < 0 {
		return f, fmt.Errorf("--from %d: want an offset (0 or more)", from)
	}
	if to >= 0 && to <= from {
		return f, fmt.Errorf("--from %d --to %d: an empty range (--to is the first offset not included)", from, to)
	}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return f, fmt.Errorf("--header %q: want KEY=VALUE", h)
		}
		f.headers[k] = v
	}
	return f, nil
}

func newDLQListCmd(srv *serverFlag) *cobra.Command {
	var (
		from, to int64
		headers  []string
	)
	cmd := &cobra.Command{
		Use:   "list TOPIC.dlq [--from N] [--to N] [--header KEY=VALUE]...",
		Short: "Print a dead-letter topic's records with where they came from and why",
		Long: `Print the records of a dead-letter topic, one a line: its partition and
offset, the source topic, partition and offset, the share group, the
delivery count, the member's error (when it gave one), and the value.
--from and --to bound the offsets (--to excluded); --header KEY=VALUE keeps
only records with that header (repeatable: all must match).`,
		Args: exactArgs("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := topicArg(args)
			if err != nil {
				return err
			}
			f, err := parseDLQFilter(from, to, headers)
			if err != nil {
				return err
			}
			return srv.run(func(c *client.Client) error {
				return dlqList(callContext(cmd), cmd.OutOrStdout(), c, topic, f)
			})
		},
	}
	cmd.Flags().Int64Var(&from, "from", 0, "the first offset")
	cmd.Flags().Int64Var(&to, "to", -1, "the first offset not listed (default: to the end)")
	cmd.Flags().StringArrayVar(&headers, "header", nil, "only records with this header KEY=VALUE (repeatable)")
	return cmd
}

// dlqList prints the records of topic f selects.
func dlqList(ctx context.Context, w io.Writer, c *client.Client, topic string, f dlqFilter) error {
	if _, err := c.Admin().DescribeTopic(ctx, topic); err != nil {
		return err
	}
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: topic, Start: client.Earliest(), MaxWait: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	defer cons.Close()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tOFFSET\tSOURCE\tGROUP\tDELIVERIES\tERROR\tVALUE")
	for {
		recs, err := cons.Poll(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		for _, r := range recs {
			if !f.match(r) {
				continue
			}
			src := dlqHeader(r, dlqTopic) + "/" + dlqHeader(r, dlqPartition) + "@" + dlqHeader(r, dlqOffset)
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Partition, r.Offset, src, dlqHeader(r, dlqGroup),
				dlqHeader(r, dlqCount), strconv.Quote(dlqHeader(r, dlqError)), strconv.Quote(string(r.Value)))
		}
	}
	return tw.Flush()
}

func newDLQPurgeCmd(srv *serverFlag) *cobra.Command {
	var (
		offset string
		part   int32
	)
	cmd := &cobra.Command{
		Use:   "purge TOPIC.dlq --offset N|end [--partition P]",
		Short: "Delete a dead-letter topic's records below an offset",
		Long: `Delete the records of a dead-letter topic's partition (default: of every
partition) below --offset, as topic trim-prefix (Kafka's DeleteRecords);
--offset end deletes every record. Needs delete on the topic.`,
		Args: exactArgs("TOPIC"),
		RunE: trimRun(srv, &offset, &part, new(bool)),
	}
	cmd.Flags().StringVar(&offset, "offset", "", "delete the records below this offset, or end for all (required)")
	cmd.Flags().Int32Var(&part, "partition", 0, "purge only this partition (default: all)")
	return cmd
}

func newDLQRedriveCmd(srv *serverFlag) *cobra.Command {
	var (
		from, to int64
		headers  []string
		group    string
	)
	cmd := &cobra.Command{
		Use:   "redrive TOPIC.dlq [--from N] [--to N] [--header KEY=VALUE]... [--group G]",
		Short: "Append a dead-letter topic's records back to their source partitions",
		Long: `Append the records of a dead-letter topic back to the topic and partition
they came from (their logd.dlq.topic and logd.dlq.partition headers), with
their key, value and own headers (the logd.dlq.* headers dropped).
--from, --to (excluded) and --header KEY=VALUE (repeatable) choose which.

Redrive is a cursor: it reads each dead-letter partition from the offset
committed by consumer group --group (default logd-dlq-redrive) and commits
the offset after each record it redrove or passed over, so running it again
appends nothing twice; a record passed over by a filter is not redriven by
a later run of the same group (use another --group). A redrive interrupted
between an append and its commit appends that one record again when run
again. Needs read on the dead-letter topic and the group, write on the
source topics.`,
		Args: exactArgs("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := topicArg(args)
			if err != nil {
				return err
			}
			f, err := parseDLQFilter(from, to, headers)
			if err != nil {
				return err
			}
			if group == "" {
				return errors.New("--group: name a consumer group, or leave the default")
			}
			return srv.run(func(c *client.Client) error {
				return dlqRedrive(callContext(cmd), cmd.OutOrStdout(), c, topic, f, group)
			})
		},
	}
	cmd.Flags().Int64Var(&from, "from", 0, "the first offset")
	cmd.Flags().Int64Var(&to, "to", -1, "the first offset not redriven (default: to the end)")
	cmd.Flags().StringArrayVar(&headers, "header", nil, "only records with this header KEY=VALUE (repeatable)")
	cmd.Flags().StringVar(&group, "group", "logd-dlq-redrive", "the consumer group whose offsets on the dead-letter topic are the cursor")
	return cmd
}

// dlqRedrive appends the records f selects back to their source, each
// acknowledged before the cursor moves past it.
func dlqRedrive(ctx context.Context, w io.Writer, c *client.Client, topic string, f dlqFilter, group string) error {
	if _, err := c.Admin().DescribeTopic(ctx, topic); err != nil {
		return err
	}
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: topic, Group: group, Start: client.Earliest(), MaxWait: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	defer cons.Close()
	prod := c.NewProducer(client.ProducerOptions{})
	defer prod.Close()
	n := 0
	for {
		recs, err := cons.Poll(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		for _, r := range recs {
			if f.match(r) {
				if err := redriveOne(ctx, prod, r); err != nil {
					return err
				}
				n++
			}
			if err := cons.CommitOffsets(ctx, map[int32]int64{r.Partition: r.Offset + 1}); err != nil {
				return err
			}
		}
	}
	_, err = fmt.Fprintf(w, "redrove %d records\n", n)
	return err
}

func redriveOne(ctx context.Context, prod *client.Producer, r client.ConsumedRecord) error {
	src := dlqHeader(r, dlqTopic)
	p, err := strconv.ParseInt(dlqHeader(r, dlqPartition), 10, 32)
	if src == "" || err != nil {
		return fmt.Errorf("record %d@%d has no %s and %s headers: not a dead letter (nothing redriven from it on)", r.Partition, r.Offset, dlqTopic, dlqPartition)
	}
	part := int32(p)
	rec := client.Record{Topic: src, Partition: &part, Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		if !strings.HasPrefix(h.Key, "logd.dlq.") {
			rec.Headers = append(rec.Headers, h)
		}
	}
	if _, err := prod.Produce(ctx, rec).Get(ctx); err != nil {
		return fmt.Errorf("redrive %d@%d to %s/%d: %w", r.Partition, r.Offset, src, part, err)
	}
	return nil
}
