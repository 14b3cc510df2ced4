package logdtest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/logd/logd/client"
	"github.com/logd/logd/logdtest"
)

func produce(t *testing.T, c *client.Client, topic, value string) client.Ack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := c.NewProducer(client.ProducerOptions{})
	defer p.Close()
	ack, err := p.Produce(ctx, client.Record{Topic: topic, Value: []byte(value)}).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ack
}

func count(t *testing.T, c *client.Client, topic string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	n := 0
	for {
		recs, err := cons.Poll(ctx)
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		n += len(recs)
	}
}

// A node keeps its records across Restart, on the same address, serves
// its HTTP API, and Close removes its directory.
func TestNodeRestartKeepsRecords(t *testing.T) {
	node := logdtest.Start(t)
	c := node.Client(t)
	if _, err := c.Admin().CreateTopic(context.Background(), "t", client.TopicOptions{}); err != nil {
		t.Fatal(err)
	}
	produce(t, c, "t", "before")
	resp, err := http.Get("http://" + node.HTTPAddr() + "/v1/topics/t")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/topics/t: %s", resp.Status)
	}
	if err := node.Restart(); err != nil {
		t.Fatal(err)
	}
	produce(t, c, "t", "after")
	if n := count(t, c, "t"); n != 2 {
		t.Fatalf("%d records after the restart, want 2", n)
	}
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(node.Dir()); !os.IsNotExist(err) {
		t.Fatalf("data directory left after Close: %v", err)
	}
}

// A 3-node cluster replicates a topic on every node and keeps taking
// records with one node stopped.
func TestClusterSurvivesOneNodeStopped(t *testing.T) {
	cl := logdtest.StartCluster(t, 3)
	c := cl.Client(t)
	ti, err := c.Admin().CreateTopic(context.Background(), "t", client.TopicOptions{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ti.Replicas != 3 {
		t.Fatalf("replicas %d, want 3", ti.Replicas)
	}
	produce(t, c, "t", "one")
	if err := cl.Nodes()[0].Stop(); err != nil {
		t.Fatal(err)
	}
	produce(t, c, "t", "two")
	if err := cl.Nodes()[0].Restart(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, c, "t"); n != 2 {
		t.Fatalf("%d records, want 2", n)
	}
}

func TestNewClusterRefusesBadSizes(t *testing.T) {
	for _, n := range []int{0, -1, 10} {
		if _, err := logdtest.NewCluster(n, logdtest.Options{}); err == nil {
			t.Errorf("NewCluster(%d) succeeded", n)
		}
	}
}
