package kafka_test

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataBrokers is the brokers a Metadata request answers, by address.
func metadataBrokers(t *testing.T, cl *kgo.Client) (map[string]int32, error) {
	t.Helper()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		return nil, err
	}
	out := map[string]int32{}
	for _, b := range resp.Brokers {
		out[net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))] = b.NodeID
	}
	return out, nil
}

// Metadata lists the brokers that are up, as Kafka lists its live
// brokers only: a stopped node drops out of the list. Clients forget a
// broker that Metadata no longer lists, and Sarama finds its group's
// coordinator again only then (it keeps sending JoinGroup to the cached
// coordinator's address while Metadata names that broker).
func TestClusterMetadataListsLiveBrokers(t *testing.T) {
	r := newClientRig(t)
	gone := r.c.Nodes()[2]
	goneAddr := r.addrs[gone.ID]
	var survivors []string
	for id, a := range r.addrs {
		if id != gone.ID {
			survivors = append(survivors, a)
		}
	}
	cl := newClient(t, survivors[0], kgo.SeedBrokers(survivors...))
	before, err := metadataBrokers(t, cl)
	if err != nil || len(before) != 3 {
		t.Fatalf("metadata before the stop: %v %v", before, err)
	}
	gone.Stop()
	deadline := time.Now().Add(20 * time.Second)
	for {
		bs, err := metadataBrokers(t, cl)
		if err == nil {
			if _, listed := bs[goneAddr]; !listed && len(bs) == 2 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("metadata 20s after node %s (%s) stopped: %v %v", gone.ID, goneAddr, bs, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
