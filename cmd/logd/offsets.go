package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

func newOffsetsCmd() *cobra.Command {
	var srv serverFlag
	cmd := &cobra.Command{
		Use:   "offsets",
		Short: "Show and reset consumer groups' committed offsets",
	}
	srv.register(cmd, true)
	cmd.AddCommand(newOffsetsShowCmd(&srv), newOffsetsResetCmd(&srv))
	return cmd
}

func newOffsetsShowCmd(srv *serverFlag) *cobra.Command {
	var (
		group  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "show --group G [TOPIC]",
		Short: "Show a group's committed offsets, the high watermarks and the lag",
		Long: `Show a group's committed offset of each partition, the partition's log start
and high watermark, and the lag (records not yet consumed). An offset below the
log start is marked: retention removed records the group had not consumed.
Every partition of the topics shown is listed, those the group never
committed too (lag from the log start): TOPIC, or without it every topic the
group committed in. --json prints one object a line: group, topic, partition,
committed_offset (null: none), log_start_offset, high_watermark, lag, trimmed,
metadata, commit_time.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if group == "" {
				return srv.run(func(c *client.Client) error { return groupRequired(callContext(cmd), c) })
			}
			topic := ""
			if len(args) == 1 {
				var err error
				if topic, err = topicArg(args); err != nil {
					return err
				}
			}
			return srv.run(func(c *client.Client) error {
				rows, err := groupOffsets(callContext(cmd), c.Admin(), group, topic)
				if err != nil {
					return err
				}
				if len(rows) == 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "group %s has no committed offsets\n", group)
					return nil
				}
				if asJSON {
					return writeOffsetsJSON(cmd.OutOrStdout(), group, rows)
				}
				return writeOffsetsTable(cmd.OutOrStdout(), rows)
			})
		},
	}
	cmd.Flags().StringVar(&group, "group", "", "consumer group (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line")
	return cmd
}

// groupRequired is the error of offsets show without --group: it names
// the groups there are.
func groupRequired(ctx context.Context, c *client.Client) error {
	groups, err := c.Admin().ListGroups(ctx)
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return errors.New("--group is required, and no group has committed offsets yet (consume with --group G --commit)")
	}
	return fmt.Errorf("--group is required: groups with committed offsets: %s", strings.Join(groups, ", "))
}

// groupOffsets is group's committed offsets of topic (empty: of every
// topic it committed in), with a row for each partition of those topics
// the group never committed: its lag counts from the log start.
func groupOffsets(ctx context.Context, admin *client.Admin, group, topic string) ([]offsetRow, error) {
	offs, err := admin.FetchOffsets(ctx, group, topic)
	if err != nil {
		return nil, err
	}
	rows := make([]offsetRow, 0, len(offs))
	topics := map[string]bool{}
	if topic != "" {
		topics[topic] = true
	}
	for _, o := range offs {
		rows = append(rows, offsetRow{CommittedOffset: o, committed: true})
		topics[o.Topic] = true
	}
	for _, t := range sortedKeys(topics) {
		ends, err := admin.ListOffsets(ctx, t, nil, client.Latest())
		if errors.Is(err, client.ErrTopicNotFound) && topic == "" {
			continue // deleted since the group committed in it
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ends {
			if !slices.ContainsFunc(rows, func(r offsetRow) bool { return r.Topic == t && r.Partition == e.Partition }) {
				rows = append(rows, offsetRow{CommittedOffset: client.CommittedOffset{
					Topic: t, Partition: e.Partition, Offset: -1,
					LogStartOffset: e.LogStartOffset, HighWatermark: e.HighWatermark,
					Lag: e.HighWatermark - e.LogStartOffset,
				}})
			}
		}
	}
	slices.SortFunc(rows, func(a, b offsetRow) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return rows, nil
}

type offsetRow struct {
	client.CommittedOffset
	committed bool
	// requested is the offset offsets reset was asked for (nil: none), and
	// clamped why the stored offset differs from it.
	requested *int64
	clamped   string
	planned   bool // offsets reset's dry run: not stored
}

func writeOffsetsTable(w io.Writer, rows []offsetRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tLOG-START\tHIGH-WATERMARK\tLAG\tNOTE")
	for _, r := range rows {
		committed, note := "-", ""
		if r.committed {
			committed = fmt.Sprint(r.Offset)
		} else {
			note = "no commit: starts at the log start"
		}
		if r.Trimmed {
			note = fmt.Sprintf("trimmed: %d records removed by retention before the group read them", r.LogStartOffset-r.Offset)
		}
		if r.clamped != "" {
			note = r.clamped
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%s\n", r.Topic, r.Partition, committed, r.LogStartOffset, r.HighWatermark, r.Lag, note)
	}
	return tw.Flush()
}

type offsetJSON struct {
	Group          string `json:"group"`
	Topic          string `json:"topic"`
	Partition      int32  `json:"partition"`
	Committed      *int64 `json:"committed_offset"`
	LogStartOffset int64  `json:"log_start_offset"`
	HighWatermark  int64  `json:"high_watermark"`
	Lag            int64  `json:"lag"`
	Trimmed        bool   `json:"trimmed"`
	Metadata       string `json:"metadata,omitempty"`
	CommitTime     string `json:"commit_time,omitempty"`
	// Set by offsets reset --json when it was asked for an offset.
	RequestedOffset *int64 `json:"requested_offset,omitempty"`
	Clamped         string `json:"clamped,omitempty"`
	// Set by offsets reset without --execute: the offset it would store.
	DryRun bool `json:"dry_run,omitempty"`
}

func writeOffsetsJSON(w io.Writer, group string, rows []offsetRow) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		j := offsetJSON{Group: group, Topic: r.Topic, Partition: r.Partition, LogStartOffset: r.LogStartOffset,
			HighWatermark: r.HighWatermark, Lag: r.Lag, Trimmed: r.Trimmed, Metadata: r.Metadata}
		if r.committed {
			off := r.Offset
			j.Committed = &off
		}
		if !r.CommitTime.IsZero() {
			j.CommitTime = r.CommitTime.UTC().Format(time.RFC3339Nano)
		}
		j.RequestedOffset, j.Clamped, j.DryRun = r.requested, r.clamped, r.planned
		if err := enc.Encode(j); err != nil {
			return err
		}
	}
	return nil
}

// resetOffsets resets group's offsets and returns the offsets stored, read
// back with the partitions' bounds, each saying whether (and why) the
// server clamped the offset asked for.
func resetOffsets(ctx context.Context, admin *client.Admin, group, topic string, p int32, pos client.Position) ([]offsetRow, error) {
	if err := groupInactive(ctx, admin, group, "offsets can be reset"); err != nil {
		return nil, err
	}
	reset, err := admin.ResetOffsets(ctx, group, topic, p, pos)
	if errors.Is(err, client.ErrUnknownMember) || errors.Is(err, client.ErrRebalanceInProgress) {
		// A member joined between the check and the reset.
		if ierr := groupInactive(ctx, admin, group, "offsets can be reset"); ierr != nil {
			return nil, ierr
		}
	}
	if err != nil {
		return nil, err
	}
	offs, err := admin.FetchOffsets(ctx, group, topic)
	if err != nil {
		return nil, err
	}
	requested, explicit := pos.Offset()
	rows := make([]offsetRow, 0, len(reset))
	for _, o := range offs {
		if !slices.ContainsFunc(reset, func(r client.CommittedOffset) bool { return r.Partition == o.Partition }) {
			continue
		}
		r := offsetRow{CommittedOffset: o, committed: true}
		if explicit {
			r.requested = &requested
			switch {
			case o.Offset < requested:
				r.clamped = fmt.Sprintf("clamped: offset %d is past the end of the partition; stored the high watermark, %d", requested, o.Offset)
			case o.Offset > requested:
				r.clamped = fmt.Sprintf("clamped: offset %d was removed by retention; stored the log start, %d", requested, o.Offset)
			}
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b offsetRow) int { return int(a.Partition - b.Partition) })
	return rows, nil
}

// groupInactive fails, as Kafka's kafka-consumer-groups does, when group
// has members, saying what (such as "offsets can be reset") waits for
// them to stop: the coordinator refuses offsets from outside a group that
// has them, and its members would overwrite them with their next commit.
func groupInactive(ctx context.Context, admin *client.Admin, group, what string) error {
	d, err := admin.DescribeGroup(ctx, group)
	switch {
	case errors.Is(err, client.ErrGroupNotFound):
		return nil
	case err != nil:
		return err
	case len(d.Members) > 0:
		return fmt.Errorf("%s only while group %q is inactive, but it has %d active member%s (state %s): stop its consumers first", what, group, len(d.Members), plural(len(d.Members)), d.State)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// partitionFlag is --partition's value (part) when it was given, checked,
// else client.AllPartitions.
func partitionFlag(cmd *cobra.Command, part int32) (int32, error) {
	if !cmd.Flags().Changed("partition") {
		return client.AllPartitions, nil
	}
	if part < 0 {
		return 0, fmt.Errorf("--partition %d: partitions are numbered from 0", part)
	}
	return part, nil
}
