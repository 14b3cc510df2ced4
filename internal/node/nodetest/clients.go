package nodetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/client"
)

// ClusterClient dials every node of cl; it is closed at the end of the
// test.
func ClusterClient(t *testing.T, cl *Cluster) *client.Client {
	t.Helper()
	c, err := client.Dial(strings.Join(cl.Addrs(), ","))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TLSClient dials addr over TLS trusting caFile, presenting the
// certificate files when given; it is closed at the end of the test.
func TLSClient(t *testing.T, addr, caFile, certFile, keyFile string) *client.Client {
	t.Helper()
	tc, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: caFile, CertFile: certFile, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(addr, client.WithTLS(tc), client.WithRetryTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ProduceUntil produces values to topic through seeds and reads the topic
// from the start until it has at least total records.
func ProduceUntil(t *testing.T, seeds []string, topic string, total int, values ...string) []string {
	t.Helper()
	c, err := client.Dial(strings.Join(seeds, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := c.NewProducer(client.ProducerOptions{})
	for _, v := range values {
		if _, err := p.Produce(ctx, client.Record{Topic: topic, Value: []byte(v)}).Get(ctx); err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
	}
	p.Close()
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < total {
		recs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatalf("consume: %v (read %q)", err, got)
		}
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
	}
	return got
}

// ProduceAll produces values to topic through seeds and reads them back
// from the start.
func ProduceAll(t *testing.T, seeds []string, topic string, values ...string) []string {
	t.Helper()
	return ProduceUntil(t, seeds, topic, len(values), values...)
}
