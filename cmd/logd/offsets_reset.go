package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

// resetFlags are offsets reset's flags.
type resetFlags struct {
	group     string
	to        string
	shiftBy   int64
	part      int32
	allTopics bool
	execute   bool
	dryRun    bool
	asJSON    bool
}

func newOffsetsResetCmd(srv *serverFlag) *cobra.Command {
	var fl resetFlags
	cmd := &cobra.Command{
		Use:   "reset --group G (TOPIC | --all-topics) (--to POSITION | --shift-by N) [--partition P] [--execute]",
		Short: "Move a group's committed offsets (a dry run unless --execute; stop its consumers first)",
		Long: `Move a group's committed offsets. As Kafka's kafka-consumer-groups
--reset-offsets, it is a dry run by default: it prints the offsets it would
store; --execute stores them and prints the offsets stored. The group must
have no active members (stop its consumers first).

--to earliest|latest|OFFSET|RFC3339|-DURATION moves every partition there;
--shift-by N moves each partition's committed offset by N (negative: back;
a partition without a commit shifts from its log start). --all-topics
resets every topic the group committed in, instead of TOPIC.

An offset outside a partition's records is clamped, as Kafka does: past the
end to the high watermark, below the log start (removed by retention) to the
log start; the NOTE column (and a line on stderr) says so. --json prints one
object a line, as offsets show does, with requested_offset, clamped, and
dry_run on a dry run.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fl.check(cmd, args); err != nil {
				return err
			}
			var pos *client.Position
			if fl.to != "" {
				p, err := parsePosition(fl.to, time.Now())
				if err != nil {
					return fmt.Errorf("--to: %w", err)
				}
				pos = &p
			}
			p, err := partitionFlag(cmd, fl.part)
			if err != nil {
				return err
			}
			return srv.run(func(c *client.Client) error {
				return runReset(callContext(cmd), cmd, c.Admin(), fl, args, p, pos)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.group, "group", "", "consumer group (required)")
	f.StringVar(&fl.to, "to", "", "new position: earliest, latest, OFFSET, RFC3339 time or -DURATION")
	f.Int64Var(&fl.shiftBy, "shift-by", 0, "move each committed offset by N (negative: back)")
	f.Int32Var(&fl.part, "partition", 0, "reset only this partition (default: all)")
	f.BoolVar(&fl.allTopics, "all-topics", false, "reset every topic the group committed in")
	f.BoolVar(&fl.execute, "execute", false, "store the new offsets (default: a dry run that prints them)")
	f.BoolVar(&fl.dryRun, "dry-run", false, "print the offsets it would store without storing them (the default)")
	f.BoolVar(&fl.asJSON, "json", false, "print one JSON object a line")
	return cmd
}

// check validates the flag combination.
func (fl *resetFlags) check(cmd *cobra.Command, args []string) error {
	switch {
	case fl.group == "":
		return errors.New("--group is required: which consumer group to reset?")
	case fl.to == "" && !cmd.Flags().Changed("shift-by"):
		return errors.New("give --to (earliest, latest, an offset, an RFC 3339 time or -DURATION) or --shift-by N")
	case fl.to != "" && cmd.Flags().Changed("shift-by"):
		return errors.New("--to and --shift-by exclude each other: give one")
	case fl.execute && fl.dryRun:
		return errors.New("--execute and --dry-run exclude each other: give one")
	case fl.allTopics && len(args) > 0:
		return fmt.Errorf("--all-topics resets every topic of the group: drop %q", args[0])
	case fl.allTopics && cmd.Flags().Changed("partition"):
		return errors.New("--partition names a partition of one topic: give TOPIC, not --all-topics")
	case !fl.allTopics && len(args) != 1:
		return fmt.Errorf("give one TOPIC, or --all-topics: usage: %s", cmd.UseLine())
	}
	if len(args) == 1 {
		_, err := topicArg(args)
		return err
	}
	return nil
}

// runReset plans the reset of fl.group's offsets and, with --execute,
// stores it; then prints the result.
func runReset(ctx context.Context, cmd *cobra.Command, admin *client.Admin, fl resetFlags, args []string, p int32, pos *client.Position) error {
	topics := args
	if fl.allTopics {
		offs, err := admin.FetchOffsets(ctx, fl.group, "")
		if err != nil {
			return err
		}
		for _, o := range offs {
			if !slices.Contains(topics, o.Topic) {
				topics = append(topics, o.Topic)
			}
		}
		if len(topics) == 0 {
			return fmt.Errorf("group %q has no committed offsets: name the TOPIC to reset", fl.group)
		}
		slices.Sort(topics)
	}
	if err := groupInactive(ctx, admin, fl.group, "offsets can be reset"); err != nil {
		return err
	}
	var rows []offsetRow
	for _, topic := range topics {
		var (
			r   []offsetRow
			err error
		)
		switch {
		case fl.execute && pos != nil:
			r, err = resetOffsets(ctx, admin, fl.group, topic, p, *pos)
		default:
			r, err = planReset(ctx, admin, fl.group, topic, p, pos, fl.shiftBy)
			if err == nil && fl.execute {
				r, err = storeShift(ctx, admin, fl.group, topic, r)
			}
		}
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	for _, r := range rows {
		if r.clamped != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "logd: %s/%d: %s\n", r.Topic, r.Partition, r.clamped)
		}
	}
	if fl.asJSON {
		return writeOffsetsJSON(cmd.OutOrStdout(), fl.group, rows)
	}
	what := fmt.Sprintf("shifted by %d", fl.shiftBy)
	if pos != nil {
		what = fmt.Sprintf("asked for %s", *pos)
	}
	if fl.execute {
		fmt.Fprintf(cmd.OutOrStdout(), "reset group %s on %s (%s); stored:\n", fl.group, strings.Join(topics, ", "), what)
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "dry run: group %s on %s (%s) would store these offsets; --execute stores them:\n", fl.group, strings.Join(topics, ", "), what)
	}
	return writeOffsetsTable(cmd.OutOrStdout(), rows)
}

// planReset computes the offsets a reset of group on topic would store:
// pos resolved by the server, or (pos nil) each committed offset moved by
// shift; each clamped to the partition's records.
func planReset(ctx context.Context, admin *client.Admin, group, topic string, p int32, pos *client.Position, shift int64) ([]offsetRow, error) {
	var parts []int32
	if p != client.AllPartitions {
		parts = []int32{p}
	}
	at := client.Latest()
	if pos != nil {
		at = *pos
	}
	resolved, err := admin.ListOffsets(ctx, topic, parts, at)
	if err != nil {
		return nil, err
	}
	committed := map[int32]int64{}
	if pos == nil {
		offs, err := admin.FetchOffsets(ctx, group, topic)
		if err != nil {
			return nil, err
		}
		for _, o := range offs {
			committed[o.Partition] = o.Offset
		}
	}
	rows := make([]offsetRow, 0, len(resolved))
	for _, r := range resolved {
		want, explicit := r.Offset, false
		if pos != nil {
			_, explicit = pos.Offset()
		} else {
			base, ok := committed[r.Partition]
			if !ok {
				base = r.LogStartOffset
			}
			want, explicit = base+shift, true
		}
		row := offsetRow{committed: true, planned: true, CommittedOffset: client.CommittedOffset{Topic: topic, Partition: r.Partition,
			Offset: min(max(want, r.LogStartOffset), r.HighWatermark), LogStartOffset: r.LogStartOffset, HighWatermark: r.HighWatermark}}
		row.Lag = row.HighWatermark - row.Offset
		if explicit {
			requested := want
			row.requested = &requested
			switch {
			case want > row.Offset:
				row.clamped = fmt.Sprintf("clamped: offset %d is past the end of the partition; the high watermark, %d, instead", want, row.Offset)
			case want < row.Offset:
				row.clamped = fmt.Sprintf("clamped: offset %d was removed by retention (or is below 0); the log start, %d, instead", want, row.Offset)
			}
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b offsetRow) int { return int(a.Partition - b.Partition) })
	return rows, nil
}

// storeShift stores planned offsets and returns them as stored.
func storeShift(ctx context.Context, admin *client.Admin, group, topic string, planned []offsetRow) ([]offsetRow, error) {
	offs := make([]client.CommittedOffset, 0, len(planned))
	for _, r := range planned {
		offs = append(offs, client.CommittedOffset{Topic: topic, Partition: r.Partition, Offset: r.Offset})
	}
	if err := admin.CommitOffsets(ctx, group, offs); err != nil {
		return nil, err
	}
	for i := range planned {
		planned[i].planned = false
	}
	return planned, nil
}
