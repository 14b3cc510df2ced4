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

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

func newGroupCmd() *cobra.Command {
	var srv serverFlag
	cmd := &cobra.Command{
		Use:   "group",
		Short: "Show consumer groups' members and what each reads",
	}
	srv.register(cmd, true)
	cmd.AddCommand(newGroupListCmd(&srv), newGroupDescribeCmd(&srv), newGroupDeleteCmd(&srv))
	return cmd
}

func newGroupListCmd(srv *serverFlag) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List consumer groups and their state",
		Long: `List every consumer group: those with members, with their state (Stable,
PreparingRebalance, ...), and those that only have committed offsets (Empty).
--json prints one object a line: group, state.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return srv.run(func(c *client.Client) error {
				gs, err := c.Admin().ListMemberGroups(callContext(cmd))
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if asJSON {
					enc := json.NewEncoder(w)
					for _, g := range gs {
						if err := enc.Encode(struct {
							Group string `json:"group"`
							State string `json:"state"`
						}{g.Group, g.State}); err != nil {
							return err
						}
					}
					return nil
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "GROUP\tSTATE")
				for _, g := range gs {
					fmt.Fprintf(tw, "%s\t%s\n", g.Group, g.State)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line")
	return cmd
}

func newGroupDeleteCmd(srv *serverFlag) *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP",
		Short: "Delete a consumer group and its committed offsets",
		Long: `Delete a consumer group that has no members, with its committed offsets, as
kafka-consumer-groups --delete does. A group with members is refused: stop
them first.`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			group := args[0]
			if group == "" {
				return errors.New("the group name is empty")
			}
			return srv.run(func(c *client.Client) error {
				ctx := callContext(cmd)
				err := c.Admin().DeleteGroup(ctx, group)
				if errors.Is(err, client.ErrGroupNotEmpty) {
					if ierr := groupInactive(ctx, c.Admin(), group, "a group can be deleted"); ierr != nil {
						return ierr
					}
				}
				if errors.Is(err, client.ErrGroupNotFound) {
					return fmt.Errorf("group %q not found: it has no members and no committed offsets (logd group list shows the groups)", group)
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted group %s\n", group)
				return nil
			})
		},
	}
}

func newGroupDescribeCmd(srv *serverFlag) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "describe GROUP",
		Short: "Show a group's members, their partitions, committed offsets and lag",
		Long: `Show a consumer group: its state, generation and assignor, each member (id,
client, host, partitions), and for every partition of the topics the group
reads or committed in: the member reading it, the committed offset, the high
watermark and the lag. A group whose members all left (or that only has
committed offsets) shows no members. --json prints one object.

A share group (logd consume --share, a Kafka share consumer) shows its
state, epoch and members (id, client, host, epoch, topics), and each share
partition the coordinator serves: its start offset (every record below it
is done), its end (the first offset never acquired), and the records in
flight between them, available or acquired. The coordinator knows a
share group once a member joined it since it started; in a cluster it
shows the share partitions whose partitions it leads.`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			group := args[0]
			if group == "" {
				return errors.New("the group name is empty")
			}
			return srv.run(func(c *client.Client) error {
				if ok, err := describeShareGroup(callContext(cmd), c.Admin(), group, cmd.OutOrStdout(), asJSON); ok || err != nil {
					return err
				}
				d, rows, err := describeGroup(callContext(cmd), c.Admin(), group)
				if err != nil {
					return err
				}
				if asJSON {
					return writeGroupJSON(cmd.OutOrStdout(), d, rows)
				}
				return writeGroupTable(cmd.OutOrStdout(), d, rows)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// groupRow is one partition of a described group.
type groupRow struct {
	offsetRow
	member string // "" when no member reads it
}

// describeGroup gathers the membership (empty when the coordinator holds
// no such group) and every partition's offsets of the topics the members
// read or the group committed in.
func describeGroup(ctx context.Context, admin *client.Admin, group string) (client.GroupDescription, []groupRow, error) {
	d, err := admin.DescribeGroup(ctx, group)
	if errors.Is(err, client.ErrGroupNotFound) {
		// No member since the coordinator started: a group only if it has
		// committed offsets.
		offs, ferr := admin.FetchOffsets(ctx, group, "")
		if ferr != nil {
			return d, nil, ferr
		}
		if len(offs) == 0 {
			return d, nil, fmt.Errorf("group %q not found: no member has joined it and it has no committed offsets (logd group list shows the groups)", group)
		}
		d, err = client.GroupDescription{Group: group, State: "Empty"}, nil
	}
	if err != nil {
		return d, nil, err
	}
	owner := map[string]string{}
	topics := map[string]bool{}
	for _, m := range d.Members {
		for t, ps := range m.Assignment {
			topics[t] = true
			for _, p := range ps {
				owner[fmt.Sprintf("%s/%d", t, p)] = m.MemberID
			}
		}
	}
	offs, err := groupOffsets(ctx, admin, group, "")
	if err != nil {
		return d, nil, err
	}
	for _, r := range offs {
		delete(topics, r.Topic)
	}
	for _, t := range sortedKeys(topics) { // read by members, never committed
		more, err := groupOffsets(ctx, admin, group, t)
		if err != nil && !errors.Is(err, client.ErrTopicNotFound) {
			return d, nil, err
		}
		offs = append(offs, more...)
	}
	rows := make([]groupRow, 0, len(offs))
	for _, r := range offs {
		rows = append(rows, groupRow{offsetRow: r, member: owner[fmt.Sprintf("%s/%d", r.Topic, r.Partition)]})
	}
	slices.SortFunc(rows, func(a, b groupRow) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return d, rows, nil
}

func writeGroupTable(w io.Writer, d client.GroupDescription, rows []groupRow) error {
	fmt.Fprintf(w, "group %s: %s, generation %d, assignor %s, %d members", d.Group, d.State, d.Generation, orDash(d.Assignor), len(d.Members))
	if d.Coordinator != "" {
		fmt.Fprintf(w, ", coordinator %s", d.Coordinator)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(d.Members) > 0 {
		fmt.Fprintln(tw, "\nMEMBER\tCLIENT\tHOST\tPARTITIONS")
		for _, m := range d.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.MemberID, orDash(m.ClientID), orDash(m.ClientHost), assignmentString(m.Assignment))
		}
	}
	if len(rows) > 0 {
		fmt.Fprintln(tw, "\nTOPIC\tPARTITION\tMEMBER\tCOMMITTED\tHIGH-WATERMARK\tLAG")
		for _, r := range rows {
			committed := "-"
			if r.committed {
				committed = fmt.Sprint(r.Offset)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\n", r.Topic, r.Partition, orDash(r.member), committed, r.HighWatermark, r.Lag)
		}
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// assignmentString is "orders/0,1 audit/3", topics in name order.
func assignmentString(a map[string][]int32) string {
	var parts []string
	for _, t := range sortedKeys(a) {
		ps := slices.Clone(a[t])
		slices.Sort(ps)
		var nums []string
		for _, p := range ps {
			nums = append(nums, fmt.Sprint(p))
		}
		parts = append(parts, t+"/"+strings.Join(nums, ","))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

type groupJSON struct {
	Group       string            `json:"group"`
	State       string            `json:"state"`
	Generation  int32             `json:"generation"`
	Assignor    string            `json:"assignor"`
	Coordinator string            `json:"coordinator,omitempty"`
	Members     []groupMemberJSON `json:"members"`
	Partitions  []groupPartJSON   `json:"partitions"`
}

type groupMemberJSON struct {
	MemberID         string             `json:"member_id"`
	ClientID         string             `json:"client_id"`
	ClientHost       string             `json:"client_host"`
	SessionTimeoutMs int64              `json:"session_timeout_ms"`
	Assignment       map[string][]int32 `json:"assignment"`
}

type groupPartJSON struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	Member        string `json:"member,omitempty"`
	Committed     *int64 `json:"committed_offset"`
	HighWatermark int64  `json:"high_watermark"`
	Lag           int64  `json:"lag"`
}

func writeGroupJSON(w io.Writer, d client.GroupDescription, rows []groupRow) error {
	j := groupJSON{Group: d.Group, State: d.State, Generation: d.Generation, Assignor: d.Assignor, Coordinator: d.Coordinator,
		Members: []groupMemberJSON{}, Partitions: []groupPartJSON{}}
	for _, m := range d.Members {
		j.Members = append(j.Members, groupMemberJSON{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			SessionTimeoutMs: m.SessionTimeout.Milliseconds(), Assignment: m.Assignment})
	}
	for _, r := range rows {
		p := groupPartJSON{Topic: r.Topic, Partition: r.Partition, Member: r.member, HighWatermark: r.HighWatermark, Lag: r.Lag}
		if r.committed {
			off := r.Offset
			p.Committed = &off
		}
		j.Partitions = append(j.Partitions, p)
	}
	return json.NewEncoder(w).Encode(j)
}
