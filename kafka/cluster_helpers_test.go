package kafka_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/internal/batch"
)

// The cluster tests run whole nodes (package node, which imports this
// package), so they are tests of package kafka_test, with helpers of
// their own.

// clusterID is the cluster id Metadata and DescribeCluster answer.
const clusterID = "logd"

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newClient is a franz-go client of addr that does not compress.
func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testBatch(t testing.TB, value string) []byte {
	t.Helper()
	return batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte(value)}})
}

// topicConfigValues is DescribeConfigs' answer for topic, by key.
func topicConfigValues(t *testing.T, adm *kadm.Client, topic string) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v %s", topic, err, rc.Err, rc.ErrMessage)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}
