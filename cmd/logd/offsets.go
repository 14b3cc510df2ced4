package main

import (
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
log start is marked: retention removed records the group had not consumed. With
TOPIC, partitions the group has not committed are listed too (lag from the log
start). --json prints one object a line.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if group == "" {
				return srv.run(func(c *client.Client) error {
					groups, err := c.Admin().ListGroups(cmd.Context())
					if err != nil {
						return err
					}
					if len(groups) == 0 {
						return errors.New("--group is required, and no group has committed offsets yet (consume with --group G --commit)")
					}
					return fmt.Errorf("--group is required: groups with committed offsets: %s", strings.Join(groups, ", "))
				})
			}
			topic := ""
			if len(args) == 1 {
				var err error
				if topic, err = topicArg(args); err != nil {
					return err
				}
			}
			return srv.run(func(c *client.Client) error {
				ctx := cmd.Context()
				offs, err := c.Admin().FetchOffsets(ctx, group, topic)
				if err != nil {
					return err
				}
				rows := make([]offsetRow, 0, len(offs))
				for _, o := range offs {
					rows = append(rows, offsetRow{CommittedOffset: o, committed: true})
				}
				if topic != "" {
					// Partitions without a commit: the group would start at the log start.
					ends, err := c.Admin().ListOffsets(ctx, topic, nil, client.Latest())
					if err != nil {
						return err
					}
					for _, e := range ends {
						if !slices.ContainsFunc(rows, func(r offsetRow) bool { return r.Partition == e.Partition }) {
							rows = append(rows, offsetRow{CommittedOffset: client.CommittedOffset{
								Topic: topic, Partition: e.Partition, Offset: -1,
								LogStartOffset: e.LogStartOffset, HighWatermark: e.HighWatermark,
								Lag: e.HighWatermark - e.LogStartOffset,
							}})
						}
					}
				}
				if len(rows) == 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "group %s has no committed offsets\n", group)
					return nil
				}
				slices.SortFunc(rows, func(a, b offsetRow) int {
					if c := strings.Compare(a.Topic, b.Topic); c != 0 {
						return c
					}
					return int(a.Partition - b.Partition)
				})
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

type offsetRow struct {
	client.CommittedOffset
	committed bool
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
		if err := enc.Encode(j); err != nil {
			return err
		}
	}
	return nil
}

func newOffsetsResetCmd(srv *serverFlag) *cobra.Command {
	var (
		group string
		to    string
		part  int32
	)
	cmd := &cobra.Command{
		Use:   "reset --group G TOPIC --to earliest|latest|OFFSET|RFC3339|-DURATION [--partition P]",
		Short: "Move a group's committed offsets (stop its consumers first)",
		Args:  exactArgs("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := topicArg(args)
			if err != nil {
				return err
			}
			if group == "" {
				return errors.New("--group is required: which consumer group to reset?")
			}
			if to == "" {
				return errors.New("--to is required: earliest, latest, an offset, an RFC 3339 time or -DURATION")
			}
			pos, err := parsePosition(to, time.Now())
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			p := int32(client.AllPartitions)
			if cmd.Flags().Changed("partition") {
				if part < 0 {
					return fmt.Errorf("--partition %d: partitions are numbered from 0", part)
				}
				p = part
			}
			return srv.run(func(c *client.Client) error {
				reset, err := c.Admin().ResetOffsets(cmd.Context(), group, topic, p, pos)
				if err != nil {
					return err
				}
				// The reset answer carries only the offsets: read them back
				// with the partitions' bounds and lag.
				offs, err := c.Admin().FetchOffsets(cmd.Context(), group, topic)
				if err != nil {
					return err
				}
				rows := make([]offsetRow, 0, len(reset))
				for _, o := range offs {
					if slices.ContainsFunc(reset, func(r client.CommittedOffset) bool { return r.Partition == o.Partition }) {
						rows = append(rows, offsetRow{CommittedOffset: o, committed: true})
					}
				}
				slices.SortFunc(rows, func(a, b offsetRow) int { return int(a.Partition - b.Partition) })
				fmt.Fprintf(cmd.OutOrStdout(), "reset group %s on %s to %s:\n", group, topic, pos)
				return writeOffsetsTable(cmd.OutOrStdout(), rows)
			})
		},
	}
	cmd.Flags().StringVar(&group, "group", "", "consumer group (required)")
	cmd.Flags().StringVar(&to, "to", "", "new position: earliest, latest, OFFSET, RFC3339 time or -DURATION (required)")
	cmd.Flags().Int32Var(&part, "partition", 0, "reset only this partition (default: all)")
	return cmd
}
