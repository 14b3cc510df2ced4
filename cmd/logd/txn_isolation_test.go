package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/client"
	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// kafkaTxn produces values to topic's partition 0 in one transaction of
// cl and commits or aborts it.
func kafkaTxn(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, commit bool, values ...string) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("transactional produce: %v", err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// Records of a transaction a Kafka client aborted are hidden from logd's
// own readers by default (the Go client, gRPC, HTTP, the CLI: all
// read_committed) and shown with read_uncommitted; the transactions'
// markers are shown to neither; an unknown isolation is refused with a
// clear error.
func TestNativeReadsHideAbortedKafkaTransactions(t *testing.T) {
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--kafka-addr", "127.0.0.1:0")
	kafkaAddr := kafkaListener(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.TransactionalID("native-iso"),
		kgo.TransactionTimeout(10*time.Second), kgo.DefaultProduceTopic("tx"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "tx"); err != nil {
		t.Fatal(err)
	}
	kafkaTxn(ctx, t, cl, "tx", true, "c1", "c2")
	kafkaTxn(ctx, t, cl, "tx", false, "a1", "a2")
	kafkaTxn(ctx, t, cl, "tx", true, "c3")
	committed := []string{"c1", "c2", "c3"}
	all := []string{"c1", "c2", "a1", "a2", "c3"}

	c, err := client.Dial(n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		iso  client.Isolation
		want []string
	}{{client.ReadCommitted, committed}, {client.ReadUncommitted, all}} {
		if got := clientValues(ctx, t, c, tc.iso); !slices.Equal(got, tc.want) {
			t.Errorf("client %v read %q, want %q", tc.iso, got, tc.want)
		}
	}
	if _, err := clientRead(ctx, c, client.Isolation(7)); err == nil || !strings.Contains(err.Error(), "unknown isolation") {
		t.Errorf("client with isolation 7: %v, want an unknown isolation error", err)
	}
	cc, err := grpc.NewClient(n.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	_, err = logdv1.NewLogClient(cc).Fetch(ctx, &logdv1.FetchRequest{Topic: "tx", Isolation: 9})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "unknown isolation 9") {
		t.Errorf("gRPC Fetch with isolation 9: %v, want InvalidArgument unknown isolation", err)
	}

	for _, tc := range []struct {
		query string
		want  []string
	}{{"", committed}, {"&isolation=read_committed", committed}, {"&isolation=read_uncommitted", all}} {
		if got := httpValues(t, n, tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("HTTP read%s: %q, want %q", tc.query, got, tc.want)
		}
	}
	if code, body := httpGet(t, n, "/v1/topics/tx/records?partition=0&isolation=dirty"); code != http.StatusBadRequest ||
		!strings.Contains(body, "read_uncommitted") {
		t.Errorf("HTTP isolation=dirty: %d %s, want 400 naming the choices", code, body)
	}

	for _, tc := range []struct {
		args []string
		want []string
	}{{nil, committed}, {[]string{"--isolation", "read_committed"}, committed}, {[]string{"--isolation", "read_uncommitted"}, all}} {
		res := runBin(t, nil, "", append([]string{"consume", "tx", "--server", n.addr}, tc.args...)...)
		if got := strings.Fields(res.stdout); res.code != 0 || !slices.Equal(got, tc.want) {
			t.Errorf("logd consume %q: exit %d, %q (stderr %s), want %q", tc.args, res.code, got, res.stderr, tc.want)
		}
	}
	res := runBin(t, nil, "", "consume", "tx", "--server", n.addr, "--isolation", "dirty")
	if res.code == 0 || !strings.Contains(res.stderr, "--isolation") {
		t.Errorf("logd consume --isolation dirty: exit %d, stderr %s", res.code, res.stderr)
	}
}

// clientRead reads topic tx to its end with the Go client.
func clientRead(ctx context.Context, c *client.Client, iso client.Isolation) ([]client.ConsumedRecord, error) {
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: "tx", Isolation: iso})
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	var out []client.ConsumedRecord
	for {
		recs, err := cons.Poll(ctx)
		out = append(out, recs...)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

func clientValues(ctx context.Context, t *testing.T, c *client.Client, iso client.Isolation) []string {
	t.Helper()
	recs, err := clientRead(ctx, c, iso)
	if err != nil {
		t.Fatalf("client %v: %v", iso, err)
	}
	var vs []string
	for _, r := range recs {
		vs = append(vs, string(r.Value))
	}
	return vs
}

// httpValues reads topic tx's partition 0 over HTTP, following
// next_offset to the high watermark.
func httpValues(t *testing.T, n *binNode, query string) []string {
	t.Helper()
	var vs []string
	var off int64
	for range 20 {
		code, body := httpGet(t, n, "/v1/topics/tx/records?partition=0&max=2&offset="+strconv.FormatInt(off, 10)+query)
		if code != http.StatusOK {
			t.Fatalf("HTTP read: %d %s", code, body)
		}
		var a struct {
			Records []struct {
				Value string `json:"value"`
			} `json:"records"`
			NextOffset    int64 `json:"next_offset"`
			HighWatermark int64 `json:"high_watermark"`
		}
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			t.Fatalf("HTTP read %s: %v", body, err)
		}
		for _, r := range a.Records {
			vs = append(vs, r.Value)
		}
		if a.NextOffset >= a.HighWatermark || a.NextOffset == off {
			return vs
		}
		off = a.NextOffset
	}
	t.Fatalf("HTTP read did not reach the end: %q", vs)
	return nil
}

func httpGet(t *testing.T, n *binNode, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + n.http + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
