package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// Metadata answers from the topics' layout: every partition's leader and
// replicas, and never a describe that asks each partition's leader for its
// offsets (a Raft round per partition: clients ask for Metadata every few
// hundred milliseconds, and a topic may have thousands of partitions).
func TestMetadataAsksNoLeaderForOffsets(t *testing.T) {
	f := newFakeCore()
	for _, name := range []string{"a", "b"} {
		cfg := broker.DefaultConfig(name)
		cfg.Partitions = 5
		if _, err := f.CreateTopic(testCtx(t), "", cfg); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, f, Config{})
	cl := newClient(t, s.Addr().String())
	all := kmsg.NewPtrMetadataRequest() // Topics nil: every topic
	named := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("b")
	named.Topics = append(named.Topics, rt)
	for name, req := range map[string]*kmsg.MetadataRequest{"all topics": all, "one topic": named} {
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(resp.Topics) == 0 {
			t.Fatalf("%s: no topics in the answer", name)
		}
		for _, tp := range resp.Topics {
			if tp.IsInternal {
				continue // __consumer_offsets, virtual (internal_topic_test.go)
			}
			if tp.ErrorCode != 0 || len(tp.Partitions) != 5 {
				t.Fatalf("%s: topic %s: error %d, %d partitions, want 0 and 5", name, *tp.Topic, tp.ErrorCode, len(tp.Partitions))
			}
			for _, p := range tp.Partitions {
				if p.Leader != 1 || len(p.Replicas) != 1 {
					t.Fatalf("%s: %s-%d: leader %d, replicas %v", name, *tp.Topic, p.Partition, p.Leader, p.Replicas)
				}
			}
		}
	}
	if n := f.described.Load(); n != 0 {
		t.Fatalf("Metadata made %d describes asking every partition's leader for offsets, want 0", n)
	}
}
