package kafka_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/internal/batch"
)

// checkAdminOnFollower sends CreateTopics, AlterConfigs, CreatePartitions
// and DeleteTopics straight to a node that does not lead the cluster
// metadata: it passes each on to the leader (Kafka clients do not retry
// NOT_CONTROLLER), and the change shows on every node.
func checkAdminOnFollower(t *testing.T, cl *kgo.Client, adm *kadm.Client) {
	t.Helper()
	ctx := testCtx(t)
	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var follower int32 = -1
	for _, b := range md.Brokers {
		if b.NodeID != md.Controller {
			follower = b.NodeID
		}
	}
	to := cl.Broker(int(follower))
	const topic = "fwd"

	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 3
	ct.Configs = append(ct.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "retention.ms", Value: kmsg.StringPtr("3600000")})
	create.Topics, create.TimeoutMillis = append(create.Topics, ct), 20000
	if resp, err := create.RequestWith(ctx, to); err != nil || resp.Topics[0].ErrorCode != 0 || resp.Topics[0].NumPartitions != 1 {
		t.Fatalf("CreateTopics on broker %d (controller %d): %+v, %v", follower, md.Controller, resp, err)
	}

	alter := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	ar.Configs = append(ar.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: "retention.records", Value: kmsg.StringPtr("99")})
	alter.Resources = append(alter.Resources, ar)
	if resp, err := alter.RequestWith(ctx, to); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs on broker %d: %+v, %v", follower, resp, err)
	}

	grow := kmsg.NewPtrCreatePartitionsRequest()
	gt := kmsg.NewCreatePartitionsRequestTopic()
	gt.Topic, gt.Count = topic, 2
	grow.Topics, grow.TimeoutMillis = append(grow.Topics, gt), 20000
	if resp, err := grow.RequestWith(ctx, to); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreatePartitions on broker %d: %+v, %v", follower, resp, err)
	}
	waitFor(t, "the forwarded changes on every node", func() bool {
		for _, b := range md.Brokers {
			req := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, mt)
			resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
			if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 2 {
				return false
			}
		}
		vals := topicConfigValues(t, adm, topic)
		records, ms := vals["retention.records"], vals["retention.ms"]
		// AlterConfigs replaces: retention.ms, not named, is back to its default.
		return records.MaybeValue() == "99" && ms.MaybeValue() == "604800000"
	})

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TopicNames, del.TimeoutMillis = []string{topic}, 20000
	if resp, err := del.RequestWith(ctx, to); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteTopics on broker %d: %+v, %v", follower, resp, err)
	}
	waitFor(t, "the topic gone", func() bool {
		ts, err := adm.ListTopics(ctx)
		return err == nil && !ts.Has(topic)
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkClusterEpochs: OffsetForLeaderEpoch on a partition's leader answers
// exactly, from the leader epochs its stored batches hold (read back with
// Fetch): for each epoch up to the current one, the base offset of the
// first batch of a larger epoch (or the high watermark) and the largest
// epoch at or below it a batch holds.
func checkClusterEpochs(t *testing.T, cl *kgo.Client, adm *kadm.Client) {
	t.Helper()
	ctx := testCtx(t)
	md, err := adm.Metadata(ctx, "ct")
	if err != nil {
		t.Fatal(err)
	}
	mp := md.Topics["ct"].Partitions[0]
	leader := cl.Broker(int(mp.Leader))
	type span struct {
		epoch      int32
		base, next int64
	}
	var spans []span
	for off := int64(0); ; {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "ct"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, off, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, leader)
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("fetch at %d: %+v, %v", off, resp, err)
		}
		p := resp.Topics[0].Partitions[0]
		if len(p.RecordBatches) == 0 {
			break
		}
		err = batch.Split(p.RecordBatches, func(_ []byte, info batch.Info) error {
			spans = append(spans, span{info.LeaderEpoch, info.BaseOffset, info.NextOffset()})
			off = info.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(spans) == 0 {
		t.Fatal("partition 0 holds no batch")
	}
	hw := spans[len(spans)-1].next
	for epoch := int32(0); epoch <= mp.LeaderEpoch; epoch++ {
		wantEpoch, wantEnd := epoch, hw
		if epoch < mp.LeaderEpoch {
			wantEnd = -1
			for i, s := range spans {
				if s.epoch > epoch {
					wantEnd = s.base
					if i > 0 {
						wantEpoch = spans[i-1].epoch
					}
					break
				}
			}
			if wantEnd == -1 {
				wantEpoch, wantEnd = spans[len(spans)-1].epoch, hw
			}
		}
		req := kadm.OffsetForLeaderEpochRequest{}
		req.Add("ct", 0, epoch)
		res, err := adm.OffsetForLeaderEpoch(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got := res["ct"][0]
		if got.Err != nil || got.LeaderEpoch != wantEpoch || got.EndOffset != wantEnd {
			t.Fatalf("epoch %d (current %d, batches %v): (%d, %d), %v; want (%d, %d)", epoch, mp.LeaderEpoch, spans, got.LeaderEpoch, got.EndOffset, got.Err, wantEpoch, wantEnd)
		}
	}
}

// A CreateTopics whose new partitions have no leader within its timeout
// creates the topic and answers REQUEST_TIMED_OUT, as Kafka does, naming
// the partitions without a leader; sent to either node left up, so also
// when a node passes the create on to the metadata leader and the answer
// crosses the peer service.
func TestClusterCreateTopicsTimedOut(t *testing.T) {
	addrs, c := startClusterWith(t)
	gone := c.Nodes()[2]
	gone.Stop()
	for i, n := range c.Nodes()[:2] {
		cl := newClient(t, addrs[n.ID])
		topic := fmt.Sprintf("stranded%d", i)
		req := kmsg.NewPtrCreateTopicsRequest()
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 3, 1
		req.Topics, req.TimeoutMillis = append(req.Topics, ct), 3000
		var resp *kmsg.CreateTopicsResponse
		for {
			var err error
			resp, err = req.RequestWith(testCtx(t), cl)
			if err != nil {
				t.Fatal(err)
			}
			// During the election that follows the stop, the create may be
			// refused before it is made: retry as a client would.
			if c := resp.Topics[0].ErrorCode; c != kerr.NotController.Code && c != kerr.LeaderNotAvailable.Code {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		got := resp.Topics[0]
		msg := ""
		if got.ErrorMessage != nil {
			msg = *got.ErrorMessage
		}
		if got.ErrorCode != kerr.RequestTimedOut.Code || !strings.Contains(msg, "["+gone.ID+"]") {
			t.Fatalf("CreateTopics of %s on %s with %s down: code %d (%q), want REQUEST_TIMED_OUT naming the partition on %s",
				topic, n.ID, gone.ID, got.ErrorCode, msg, gone.ID)
		}
		t.Logf("%s: %s", n.ID, msg)
		// The topic is made; a retry of the create is told so.
		again, err := req.RequestWith(testCtx(t), cl)
		if err != nil || again.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
			t.Fatalf("CreateTopics of %s again: %+v %v, want TOPIC_ALREADY_EXISTS", topic, again, err)
		}
	}
}
