package kafka_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/routing"
)

// The cluster client tests run one Kafka client that nobody here wrote
// (Sarama, kafka-go, confluent-kafka-python, kafkajs) through its admin,
// produce and group paths against three in-process nodes with RF 3. The
// client under test does the work; a franz-go admin client only looks at
// what the cluster holds afterwards (leaders, groups, committed offsets).

// clientRig is a 3-node cluster and a franz-go admin client to check it.
type clientRig struct {
	t     *testing.T
	c     *nodetest.Cluster
	addrs map[string]string // Kafka listener by node id
	seeds []string
	adm   *kadm.Client
}

func newClientRig(t *testing.T) *clientRig {
	addrs, c := startClusterWith(t)
	r := &clientRig{t: t, c: c, addrs: addrs}
	for _, a := range addrs {
		r.seeds = append(r.seeds, a)
	}
	sort.Strings(r.seeds)
	r.adm = kadm.NewClient(newClient(t, r.seeds[0], kgo.SeedBrokers(r.seeds...)))
	waitFor(t, "metadata listing 3 brokers and a controller", func() bool {
		md, err := r.adm.Metadata(testCtx(t))
		return err == nil && len(md.Brokers) == 3 && md.Controller >= 0
	})
	return r
}

// clientRecord is a record as a client produced or consumed it.
type clientRecord struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// checkTopic checks that topic has 3 partitions of 3 replicas each, led
// by more than one node, so the records a client spreads over them go to
// different leaders.
func (r *clientRig) checkTopic(topic string) {
	r.t.Helper()
	var leaders map[int32]bool
	waitFor(r.t, "leaders of "+topic, func() bool {
		md, err := r.adm.Metadata(testCtx(r.t), topic)
		if err != nil {
			return false
		}
		td := md.Topics[topic]
		leaders = map[int32]bool{}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 || len(p.Replicas) != 3 {
				return false
			}
			leaders[p.Leader] = true
		}
		return len(td.Partitions) == 3
	})
	if len(leaders) < 2 {
		r.t.Errorf("all partitions of %s are led by %v: the test needs leaders on different nodes", topic, leaders)
	}
}

// checkRouting checks that each produced record is in the partition
// logd's murmur2 routing gives its key, at an offset of its own.
func (r *clientRig) checkRouting(recs []clientRecord, partitions int) {
	r.t.Helper()
	seen := map[[2]int64]bool{}
	used := map[int32]bool{}
	for _, rec := range recs {
		if want := routing.ForKey([]byte(rec.Key), partitions); rec.Partition != want {
			r.t.Errorf("record %s went to partition %d, logd routes key %q to %d", rec.Value, rec.Partition, rec.Key, want)
		}
		k := [2]int64{int64(rec.Partition), rec.Offset}
		if seen[k] {
			r.t.Errorf("two records acknowledged at partition %d offset %d", rec.Partition, rec.Offset)
		}
		seen[k] = true
		used[rec.Partition] = true
	}
	if len(used) != partitions {
		r.t.Errorf("records went to partitions %v, want all %d", used, partitions)
	}
}

// checkExactlyOnce checks that consumed holds each produced record once.
func (r *clientRig) checkExactlyOnce(what string, produced, consumed []clientRecord) {
	r.t.Helper()
	key := func(c clientRecord) string { return fmt.Sprintf("%d/%d/%s/%s", c.Partition, c.Offset, c.Key, c.Value) }
	var want, got []string
	for _, c := range produced {
		want = append(want, key(c))
	}
	for _, c := range consumed {
		got = append(got, key(c))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		r.t.Errorf("%s: consumed %d records %v, want the %d produced %v", what, len(got), got, len(want), want)
	}
}

// waitGroupStable waits until group is stable with members members, each
// with partitions assigned.
func (r *clientRig) waitGroupStable(group string, members int) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		gs, err := r.adm.DescribeGroups(testCtx(r.t), group)
		if err == nil {
			g := gs[group]
			assigned := 0
			for _, m := range g.Members {
				if ca, ok := m.Assigned.AsConsumer(); ok && len(ca.Topics) > 0 {
					assigned++
				}
			}
			if g.Err == nil && g.State == "Stable" && len(g.Members) == members && assigned == members {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("group %s did not become stable with %d assigned members: %v", group, members, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkCommittedAtEnd checks that group committed the end of each of
// topic's partitions. It reads them again while a read fails: after a
// node stops, the admin client may still dial it (its metadata names the
// node until it learns the new leaders).
func (r *clientRig) checkCommittedAtEnd(group, topic string) {
	r.t.Helper()
	var ends kadm.ListedOffsets
	var offs kadm.OffsetResponses
	var err error
	waitFor(r.t, "the end offsets and the group's commits, read from the nodes up", func() bool {
		ends, err = r.adm.ListEndOffsets(testCtx(r.t), topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			offs, err = r.adm.FetchOffsets(testCtx(r.t), group)
		}
		if err != nil {
			r.t.Logf("reading the end offsets and the commits of %s: %v", group, err)
		}
		return err == nil
	})
	ends.Each(func(e kadm.ListedOffset) {
		c, ok := offs.Lookup(topic, e.Partition)
		if !ok || c.Err != nil || c.At != e.Offset {
			r.t.Errorf("group %s committed %+v for %s/%d, whose end is %d", group, c, topic, e.Partition, e.Offset)
		}
	})
}

// moveCoordinator stops the node that leads the metadata (the group
// coordinator) and waits until another one coordinates the groups.
func (r *clientRig) moveCoordinator() {
	r.t.Helper()
	old := metaLeaderNode(r.t, r.c)
	old.Stop()
	if n := metaLeaderNode(r.t, r.c); n == old {
		r.t.Fatal("the stopped node coordinates")
	}
	r.t.Logf("stopped node %s, the group coordinator", old.ID)
}

// runCtx bounds a client's whole run.
func runCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// runScript runs a client written in another language as a process. It
// prints a line MOVE when the test is to move the group coordinator,
// CHECK when its group's commits are to be checked (onCheck), each
// answered with a line on its standard input once done, and RESULT
// followed by JSON at the end, which runScript returns.
func (r *clientRig) runScript(env []string, onCheck func(), name string, args ...string) []byte {
	r.t.Helper()
	cmd := exec.CommandContext(runCtx(r.t), name, args...)
	cmd.Env = append(cmd.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	var result []byte
	var lines []string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		switch {
		case line == "MOVE":
			r.moveCoordinator()
			fmt.Fprintln(stdin, "moved")
		case line == "CHECK":
			onCheck()
			fmt.Fprintln(stdin, "checked")
		case strings.HasPrefix(line, "RESULT "):
			result = []byte(strings.TrimPrefix(line, "RESULT "))
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil || result == nil {
		r.t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, strings.Join(lines, "\n"), errb.String())
	}
	return result
}

// scriptResult is what the scripted clients print at the end.
type scriptResult struct {
	Partitions int               `json:"partitions"`
	Replicas   []int             `json:"replicas"`
	Brokers    int               `json:"brokers"`
	Configs    map[string]string `json:"configs"`
	Produced   [3][]clientRecord `json:"produced"`
	Consumed   [3][]clientRecord `json:"consumed"`
	Groups     []string          `json:"groups"`
	State      string            `json:"state"`
	Members    int               `json:"members"`
	Deleted    bool              `json:"deleted"`
	// GroupsAfterDelete: the groups listed after the group's deletion,
	// by a client whose admin deletes groups.
	GroupsAfterDelete []string `json:"groupsAfterDelete"`
}

// checkScript checks a scripted client's result for topic and group.
func (r *clientRig) checkScript(out []byte, group string) scriptResult {
	r.t.Helper()
	var res scriptResult
	if err := json.Unmarshal(out, &res); err != nil {
		r.t.Fatalf("result %q: %v", out, err)
	}
	if res.Partitions != 3 || !slices.Equal(res.Replicas, []int{3, 3, 3}) || res.Brokers != 3 {
		r.t.Errorf("topic as created: %d partitions of %v replicas, %d brokers", res.Partitions, res.Replicas, res.Brokers)
	}
	if res.Configs["retention.ms"] == "" || res.Configs["cleanup.policy"] != "delete" {
		r.t.Errorf("topic configs: %v", res.Configs)
	}
	var all []clientRecord
	for i, what := range []string{"two members", "restarted member", "after the coordinator moved"} {
		all = append(all, res.Produced[i]...)
		r.checkExactlyOnce(what, res.Produced[i], res.Consumed[i])
	}
	r.checkRouting(all, 3)
	if !slices.Contains(res.Groups, group) || res.State != "Stable" || res.Members != 1 {
		r.t.Errorf("groups listed %v; %s described %s with %d members, want Stable with 1", res.Groups, group, res.State, res.Members)
	}
	if !res.Deleted {
		r.t.Error("the topic was not deleted")
	}
	return res
}

func joinSeeds(seeds []string) string { return strings.Join(seeds, ",") }
