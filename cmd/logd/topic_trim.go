package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

// newTopicTrimPrefixCmd is Redpanda's rpk topic trim-prefix: Kafka's
// DeleteRecords, through Admin.DeleteRecords.
func newTopicTrimPrefixCmd(srv *serverFlag) *cobra.Command {
	var (
		offset string
		part   int32
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "trim-prefix TOPIC --offset N|end [--partition P]",
		Short: "Delete a topic's records below an offset (move the log start forward)",
		Long: `Delete the records of a partition (default: of every partition) below
--offset by moving its log start there, as Kafka's DeleteRecords: they are
never read again, and their bytes go when retention deletes their segments.
--offset end (or -1) deletes every record the partition holds. An offset at
or below the log start changes nothing; one past the high watermark fails.
Prints the log start now in force of each partition; --json prints one
object a line: topic, partition, log_start_offset. Needs delete on the
topic.`,
		Args: exactArgs("TOPIC"),
		RunE: trimRun(srv, &offset, &part, &asJSON),
	}
	cmd.Flags().StringVar(&offset, "offset", "", "the new log start: an offset, or end for the high watermark (required)")
	cmd.Flags().Int32Var(&part, "partition", 0, "trim only this partition (default: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line")
	return cmd
}

// parseTrimOffset parses --offset: an offset, or end (-1) for the high
// watermark.
// trimRun is the RunE of topic trim-prefix and dlq purge: TOPIC's
// records below the --offset flag deleted, in the --partition flag's
// partition or in every one.
func trimRun(srv *serverFlag, offset *string, part *int32, asJSON *bool) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		topic, err := topicArg(args)
		if err != nil {
			return err
		}
		off, err := parseTrimOffset(*offset)
		if err != nil {
			return err
		}
		p, err := partitionFlag(cmd, *part)
		if err != nil {
			return err
		}
		return srv.run(func(c *client.Client) error {
			return trimPrefix(callContext(cmd), cmd.OutOrStdout(), c.Admin(), topic, p, off, *asJSON)
		})
	}
}

func parseTrimOffset(s string) (int64, error) {
	switch s {
	case "":
		return 0, errors.New("--offset is required: the new log start, or end to delete every record")
	case "end", "-1":
		return client.ToHighWatermark, nil
	}
	off, err := strconv.ParseInt(s, 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("--offset %q: want an offset (0 or more) or end", s)
	}
	return off, nil
}

// trimmedJSON is one line of topic trim-prefix --json.
type trimmedJSON struct {
	Topic          string `json:"topic"`
	Partition      int32  `json:"partition"`
	LogStartOffset int64  `json:"log_start_offset"`
}

// trimPrefix trims partition p of topic (every partition with
// AllPartitions) and prints each log start now in force, stopping at the
// first failure after printing what was done.
func trimPrefix(ctx context.Context, w io.Writer, admin *client.Admin, topic string, p int32, off int64, asJSON bool) error {
	parts := []int32{p}
	if p == client.AllPartitions {
		ti, err := admin.Topic(ctx, topic)
		if err != nil {
			return err
		}
		parts = parts[:0]
		for i := range ti.Partitions {
			parts = append(parts, i)
		}
	}
	var (
		done []trimmedJSON
		err  error
	)
	for _, part := range parts {
		var start int64
		if start, err = admin.DeleteRecords(ctx, topic, part, off); err != nil {
			break
		}
		done = append(done, trimmedJSON{Topic: topic, Partition: part, LogStartOffset: start})
	}
	if werr := writeTrimmed(w, done, asJSON); err == nil {
		err = werr
	}
	return err
}

// writeTrimmed prints the partitions trimmed: a table, or one JSON object
// a line.
func writeTrimmed(w io.Writer, done []trimmedJSON, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, d := range done {
			if err := enc.Encode(d); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLOG-START")
	for _, d := range done {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", d.Topic, d.Partition, d.LogStartOffset)
	}
	return tw.Flush()
}
