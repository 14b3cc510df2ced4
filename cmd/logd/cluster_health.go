package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

// errUnhealthy is cluster health's error: its line on standard output says
// why, and the exit status tells scripts.
var errUnhealthy = errors.New("the cluster is unhealthy")

func newClusterHealthCmd(srv *serverFlag) *cobra.Command {
	return &cobra.Command{
		Use:   "health",
		Short: "One line: healthy or not, with nodes down, leaderless and under-replicated partitions (exit 1 when unhealthy)",
		Long: `Print one line saying whether the cluster is healthy, as the answering node
sees it (rpk cluster health's verdict): it is not when a node is down, a
partition has no leader (it cannot take writes or serve reads), or a
partition has a replica on a node that is down (under-replicated: it has
fewer copies than asked). Exits 0 when healthy, 1 when not, for scripts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return srv.run(func(c *client.Client) error {
				cs, err := c.Admin().ClusterStatus(callContext(cmd))
				if err != nil {
					return err
				}
				return writeHealth(cmd.OutOrStdout(), cs)
			})
		},
	}
}

// writeHealth prints cs's health line, and returns errUnhealthy when it is
// not healthy.
func writeHealth(w io.Writer, cs client.ClusterStatus) error {
	alive := map[string]bool{}
	var down []string
	for _, n := range cs.Nodes {
		alive[n.ID] = n.Alive
		if !n.Alive {
			down = append(down, n.ID)
		}
	}
	var leaderless, under []string
	for _, p := range cs.Partitions {
		name := fmt.Sprintf("%s/%d", p.Topic, p.Partition)
		if p.Leader == "" || (len(cs.Nodes) > 0 && !alive[p.Leader]) {
			leaderless = append(leaderless, name)
		}
		for _, r := range p.Replicas {
			if len(cs.Nodes) > 0 && !alive[r] {
				under = append(under, name)
				break
			}
		}
	}
	if len(down) == 0 && len(leaderless) == 0 && len(under) == 0 {
		_, err := fmt.Fprintf(w, "healthy: %d node%s up, %d partition%s, each with a leader and every replica on a live node\n",
			len(cs.Nodes), plural(len(cs.Nodes)), len(cs.Partitions), plural(len(cs.Partitions)))
		return err
	}
	list := func(xs []string) string {
		if len(xs) == 0 {
			return "none"
		}
		return strings.Join(xs, " ")
	}
	if _, err := fmt.Fprintf(w, "unhealthy: nodes down (%d): %s; leaderless partitions (%d): %s; under-replicated partitions (%d): %s\n",
		len(down), list(down), len(leaderless), list(leaderless), len(under), list(under)); err != nil {
		return err
	}
	return errUnhealthy
}
