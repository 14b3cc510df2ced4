package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

func newClusterCmd() *cobra.Command {
	var srv serverFlag
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Inspect the cluster",
	}
	srv.register(cmd, true)
	cmd.AddCommand(newClusterStatusCmd(&srv))
	cmd.AddCommand(&cobra.Command{
		Use:   "remove-node ID",
		Short: "Remove a node: its partition replicas move to the other nodes",
		Long: `Remove a node from the cluster. Each partition replica it holds moves to the
least loaded other node (which copies the partition from its leader), the
partitions' Raft groups change to the new replicas, and the node leaves the
metadata group. Stop the removed node afterwards.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return srv.run(func(c *client.Client) error {
				moved, err := c.Admin().RemoveNode(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed node %s; moved %d partition replicas", args[0], len(moved))
				if len(moved) > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), ": %s", strings.Join(moved, ", "))
				}
				fmt.Fprintln(cmd.OutOrStdout())
				return nil
			})
		},
	})
	return cmd
}

func newClusterStatusCmd(srv *serverFlag) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show nodes, each partition's leader and replicas, and Raft state",
		Long: `Show the nodes (ANSWERING marks the node that answered this request) and each
partition's leader, replicas and Raft state as that node sees them. --json
prints one object: answering_node, nodes (id, api_addr, raft_addr, alive,
answering) and partitions (topic, partition, leader, replicas, raft_state,
term, commit_index).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return srv.run(func(c *client.Client) error {
				cs, err := c.Admin().ClusterStatus(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					return writeClusterJSON(cmd.OutOrStdout(), cs)
				}
				return writeClusterTables(cmd.OutOrStdout(), cs)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func writeClusterTables(w io.Writer, cs client.ClusterStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tAPI\tRAFT\tALIVE\tANSWERING")
	for _, n := range cs.Nodes {
		answering := "no"
		if n.ID == cs.Self {
			answering = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", n.ID, n.APIAddr, dash(n.RaftAddr), n.Alive, answering)
	}
	tw.Flush()
	if len(cs.Partitions) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLEADER\tREPLICAS\tSTATE\tTERM\tCOMMIT-INDEX")
	for _, p := range cs.Partitions {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%d\n", p.Topic, p.Partition, dash(p.Leader),
			strings.Join(p.Replicas, ","), dash(p.RaftState), p.Term, p.CommitIndex)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
