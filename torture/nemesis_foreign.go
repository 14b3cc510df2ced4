package torture

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/logd/logd/client"
)

// NemesisForeignDataDir kills a node and starts it again, with its own
// addresses and id, on the data directory of another cluster: a one-node
// cluster bootstrapped under the same node id, holding a topic of the
// workload's name and shape, restarted with --join through a live node.
// That is an operator's mistake (a wrong --data-dir, a restored backup of
// another cluster) no fault of the machine can be blamed for, and the
// cluster must survive it: the node must not join, must not change the
// cluster's membership, and must not acknowledge a record the cluster
// does not hold (the record checkers see any it did). The fault fails the
// run when the membership changed or when the node, still running,
// reports itself ready. Then the foreign process is stopped and the node
// restarted on its own data. The Cluster must be a ForeignStarter.
const NemesisForeignDataDir = "foreign-data-dir"

// foreignMinDown is the least time the foreign node runs: long enough to
// have dialed the cluster and been answered.
const foreignMinDown = 5 * time.Second

// ForeignStarter is a Cluster whose nodes can be started on a data
// directory of another cluster (NemesisForeignDataDir).
type ForeignStarter interface {
	// MakeForeignDataDir bootstraps a one-node cluster of its own under
	// node's id in a new directory, creates topic with partitions in it,
	// stops it and returns the directory.
	MakeForeignDataDir(ctx context.Context, node int, topic string, partitions int32) (string, error)
	// StartForeign starts node (not running) on dir with its own
	// addresses and id, joining through node via; it does not wait for
	// the node to serve.
	StartForeign(node int, dir string, via int) error
	// Ready is the status of node's /readyz (0 when it did not answer).
	Ready(node int) int
	ProcessWatcher
	ExitCode(node int) int
}

func init() {
	hostileNemeses[NemesisForeignDataDir] = hostileNemesis{
		check: func(c Cluster, cfg NemesisConfig) error {
			if _, ok := c.(ForeignStarter); !ok || c.Size() < 2 {
				return fmt.Errorf("torture: nemesis %q needs a cluster of at least 2 processes that can start a node on another data directory", NemesisForeignDataDir)
			}
			return nil
		},
		inject: foreignDataDir,
	}
}

// foreignDataDir runs NemesisForeignDataDir on node.
func foreignDataDir(ctx context.Context, c Cluster, h *History, cfg NemesisConfig, node int, d time.Duration) error {
	if cfg.Topic == "" || cfg.Partitions <= 0 {
		return nil
	}
	fs := c.(ForeignStarter)
	dir, err := fs.MakeForeignDataDir(ctx, node, cfg.Topic, cfg.Partitions)
	if err != nil && ctx.Err() != nil {
		return nil // the run ended while the foreign data was being made: no fault began
	}
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	via := (node + 1) % c.Size()
	if err := fault(h, "kill", node, func() error { return c.Kill(node) }); err != nil {
		return err
	}
	err = fault(h, NemesisForeignDataDir, node, func() error { return fs.StartForeign(node, dir, via) },
		fmt.Sprintf("a one-node cluster's data holding %s (%d partitions), --join through node %d", cfg.Topic, cfg.Partitions, via))
	if err == nil {
		sleep(ctx, max(d, foreignMinDown))
		err = foreignOutcome(ctx, c, fs, h, node, via)
	}
	if fs.Running(node) {
		err = errors.Join(err, fault(h, "kill", node, func() error { return c.Kill(node) }))
	}
	return errors.Join(err, fault(h, "restart", node, func() error { return c.Restart(node) }))
}

// foreignOutcome records what the node on foreign data did, and fails
// when it says it is ready or the cluster's membership changed.
func foreignOutcome(ctx context.Context, c Cluster, fs ForeignStarter, h *History, node, via int) error {
	var err error
	how := fmt.Sprintf("exited with status %d", fs.ExitCode(node))
	if fs.Running(node) {
		ready := fs.Ready(node)
		how = fmt.Sprintf("still running, /readyz %d", ready)
		if ready == http.StatusOK {
			err = fmt.Errorf("torture: node %d on another cluster's data directory says it is ready", node)
		}
	}
	fault(h, "foreign-outcome", node, func() error { return err }, how)
	// Asked even when the run has just ended (ctx), with a bound of its own.
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if merr := fault(h, "membership", via, func() error { return sameMembers(mctx, c, via) }); merr != nil {
		err = errors.Join(err, merr)
	}
	return err
}

// sameMembers checks that node via lists exactly the cluster's nodes, ids
// 1..Size (ClusterArgs).
func sameMembers(ctx context.Context, c Cluster, via int) error {
	cl, err := client.Dial(c.Addr(via), client.WithCallTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	var st client.ClusterStatus
	for try := 0; ; try++ {
		if st, err = cl.Admin().ClusterStatus(ctx); err == nil || try == 10 || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return fmt.Errorf("torture: cluster status of node %d: %w", via, err)
	}
	var ids, want []string
	for _, n := range st.Nodes {
		ids = append(ids, n.ID)
	}
	for i := range c.Size() {
		want = append(want, fmt.Sprint(i+1))
	}
	slices.Sort(ids)
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		return fmt.Errorf("torture: node %d lists members %v, want %v: a node on another cluster's data changed the membership", via, ids, want)
	}
	return nil
}

// MakeForeignDataDir implements ForeignStarter: the one-node cluster runs
// on ports of its own, logging to foreign-N.log beside the nodes' logs.
func (c *ProcessCluster) MakeForeignDataDir(ctx context.Context, node int, topic string, partitions int32) (string, error) {
	dir, err := os.MkdirTemp(c.cfg.Dir, fmt.Sprintf("foreign-%d-", node))
	if err != nil {
		return "", fmt.Errorf("torture: %w", err)
	}
	n := &procNode{id: node, logPath: filepath.Join(c.cfg.Dir, fmt.Sprintf("foreign-%d.log", node))}
	for _, p := range []*string{&n.addr, &n.raftAddr, &n.httpAddr, &n.kafkaAddr} {
		if *p, err = freePort(); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	err = c.bootstrapForeign(ctx, n, dir, topic, partitions)
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// bootstrapForeign runs n alone on dir with --bootstrap, creates topic and
// stops it (SIGTERM).
func (c *ProcessCluster) bootstrapForeign(ctx context.Context, n *procNode, dir, topic string, partitions int32) error {
	args := []string{"--node-id", fmt.Sprint(n.id + 1), "--raft-addr", n.raftAddr, "--bootstrap"}
	serving, exited, _, err := c.launch(n, dir, args)
	if err != nil {
		return err
	}
	stop := func() {
		n.cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}
	select {
	case <-serving:
	case <-exited:
		return fmt.Errorf("torture: the foreign node for node %d exited before serving (see %s)", n.id, n.logPath)
	case <-time.After(c.cfg.StartTimeout):
		n.cmd.Process.Kill()
		<-exited
		return fmt.Errorf("torture: the foreign node for node %d did not serve within %s (see %s)", n.id, c.cfg.StartTimeout, n.logPath)
	}
	defer stop()
	cl, err := client.Dial(n.addr, client.WithCallTimeout(10*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, err = cl.Admin().CreateTopic(cctx, topic, client.TopicOptions{Partitions: partitions, Replicas: 1})
		if err == nil || cctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("torture: create %s on the foreign node for node %d: %w", topic, n.id, err)
	}
	return nil
}

// StartForeign implements ForeignStarter.
func (c *ProcessCluster) StartForeign(node int, dir string, via int) error {
	n := c.nodes[node]
	if _, _, ok := n.running(); ok {
		return fmt.Errorf("torture: start node %d on foreign data: still running", node)
	}
	args := []string{"--node-id", fmt.Sprint(node + 1), "--raft-addr", n.raftAddr, "--join", c.NodeAddr(via)}
	_, _, _, err := c.launch(n, dir, args)
	return err
}

// Ready implements ForeignStarter.
func (c *ProcessCluster) Ready(node int) int {
	hc := http.Client{Timeout: 3 * time.Second}
	resp, err := hc.Get("http://" + c.nodes[node].httpAddr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
