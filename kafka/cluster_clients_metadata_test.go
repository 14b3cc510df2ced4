package kafka_test

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokersAndLeaders is a Metadata answer: its brokers by address and by
// id, and topic live's partitions' leaders.
type brokersAndLeaders struct {
	addrs   map[string]int32
	ids     map[int32]bool
	leaders map[int32]int32
}

func metadataBrokers(t *testing.T, cl *kgo.Client) (brokersAndLeaders, error) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("live")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	out := brokersAndLeaders{addrs: map[string]int32{}, ids: map[int32]bool{}, leaders: map[int32]int32{}}
	if err != nil {
		return out, err
	}
	for _, b := range resp.Brokers {
		out.addrs[net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))] = b.NodeID
		out.ids[b.NodeID] = true
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out.leaders[p.Partition] = p.Leader
		}
	}
	return out, nil
}

// Metadata lists the brokers that are up, as Kafka lists a broker until
// it fences it: a stopped node drops out of the list once no partition
// names it leader, and a partition's leader is always a listed broker
// (Kafka moves a fenced broker's leaderships in the same step). Clients
// forget a broker that Metadata no longer lists, and Sarama finds its
// group's coordinator again only then (it keeps sending JoinGroup to the
// cached coordinator's address while Metadata names that broker);
// kafka-go gives up on a partition whose leader is not listed.
func TestClusterMetadataListsLiveBrokers(t *testing.T) {
	r := newClientRig(t)
	if _, err := r.adm.CreateTopic(testCtx(t), 3, 3, nil, "live"); err != nil {
		t.Fatal(err)
	}
	r.checkTopic("live")
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
	if err != nil || len(before.addrs) != 3 {
		t.Fatalf("metadata before the stop: %+v %v", before, err)
	}
	gone.Stop()
	deadline := time.Now().Add(20 * time.Second)
	for {
		md, err := metadataBrokers(t, cl)
		if err == nil {
			for p, l := range md.leaders {
				if l >= 0 && !md.ids[l] {
					t.Fatalf("partition %d is led by broker %d, which Metadata does not list: %+v", p, l, md)
				}
			}
			if _, listed := md.addrs[goneAddr]; !listed && len(md.addrs) == 2 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("metadata 20s after node %s (%s) stopped: %+v %v", gone.ID, goneAddr, md, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
