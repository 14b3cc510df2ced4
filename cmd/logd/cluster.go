package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

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
	cmd.AddCommand(newClusterStatusCmd(&srv), newClusterWaitCmd(&srv), newClusterHealthCmd(&srv))
	cmd.AddCommand(&cobra.Command{
		Use:   "remove-node ID",
		Short: "Remove a node: its partition replicas move to the other nodes",
		Long: `Remove a node from the cluster. Each partition replica it holds moves to the
least loaded other node (which copies the partition from its leader), the
partitions' Raft groups change to the new replicas, and the node leaves the
metadata group. Stop the removed node afterwards. A removed node stays out:
restarted with its data it is refused (its /readyz says so); to add it back,
empty its --data-dir and start it with --join.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return srv.run(func(c *client.Client) error {
				moved, err := c.Admin().RemoveNode(callContext(cmd), args[0])
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
		Long: `Show the nodes (ANSWERING marks the node that answered this request; KAFKA-ID
is the broker id Kafka tools show for the node) and each partition's leader,
replicas and Raft state as that node sees them. --json prints one object:
answering_node, nodes (id, api_addr, raft_addr, kafka_id, kafka_addr, alive,
answering) and partitions (topic, partition, leader, replicas, raft_state,
term, commit_index).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return srv.run(func(c *client.Client) error {
				cs, err := c.Admin().ClusterStatus(callContext(cmd))
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

func newClusterWaitCmd(srv *serverFlag) *cobra.Command {
	var nodes int
	cmd := &cobra.Command{
		Use:   "wait --nodes N",
		Short: "Wait until the cluster lists N nodes (for scripts that start nodes in the background)",
		Long: `Wait until the cluster metadata lists at least N nodes (started with
--bootstrap or --join and registered), or fail after --timeout. A script that
starts nodes with "logd serve ... &" runs it before commands that need them:
topic create places replicas on the nodes registered when it runs, and
cluster remove-node needs a node to take the replicas.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if nodes < 1 {
				return fmt.Errorf("--nodes must be at least 1, not %d", nodes)
			}
			return srv.run(func(c *client.Client) error {
				return waitNodes(callContext(cmd), cmd.OutOrStdout(), c, nodes, srv.timeout)
			})
		},
	}
	cmd.Flags().IntVar(&nodes, "nodes", 0, "how many nodes to wait for")
	return cmd
}

// waitNodes polls the cluster status until it lists n nodes, for at most
// timeout.
func waitNodes(ctx context.Context, w io.Writer, c *client.Client, n int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		cs, err := c.Admin().ClusterStatus(ctx)
		if err == nil && len(cs.Nodes) >= n {
			ids := make([]string, len(cs.Nodes))
			for i, nd := range cs.Nodes {
				ids[i] = nd.ID
			}
			fmt.Fprintf(w, "the cluster has %d nodes: %s\n", len(ids), strings.Join(ids, ", "))
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return err
			}
			return fmt.Errorf("the cluster lists %d nodes after %v, not %d: are the others started with --join? (see logd cluster status)", len(cs.Nodes), timeout, n)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func writeClusterTables(w io.Writer, cs client.ClusterStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tAPI\tRAFT\tKAFKA-ID\tKAFKA\tALIVE\tANSWERING")
	for _, n := range cs.Nodes {
		answering := "no"
		if n.ID == cs.Self {
			answering = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%v\t%s\n", n.ID, n.APIAddr, dash(n.RaftAddr), n.KafkaID, dash(n.KafkaAddr), n.Alive, answering)
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
