package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
)

func topicConfig(name string, partitions int32) broker.TopicConfig {
	c := broker.DefaultConfig(name)
	c.Partitions = partitions
	return c
}

func testBatch(t testing.TB, value string) []byte {
	t.Helper()
	return batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte(value)}})
}

// seedRequests are valid requests of every served API at its lowest and
// highest version, each with a little content.
func seedRequests(t testing.TB) [][]byte {
	var out [][]byte
	for key, a := range apis {
		for _, v := range []int16{a.min, a.max} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			fillSeed(t, req)
			// frame() prefixes the size; the fuzz input is the body.
			out = append(out, frame(req, 1)[4:])
		}
	}
	return out
}

func fillSeed(t testing.TB, req kmsg.Request) {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = testBatch(t, "v")
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics, r.Acks = append(r.Topics, rt), -1
	case *kmsg.FetchRequest:
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "t"
		ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
		r.Topics, r.MaxWaitMillis = append(r.Topics, ft), 1
	case *kmsg.MetadataRequest:
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("t")
		r.Topics = append(r.Topics, mt)
	case *kmsg.CreateTopicsRequest:
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "new", 2, 1
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
		ct.Configs = append(ct.Configs, c)
		r.Topics = append(r.Topics, ct)
	case *kmsg.JoinGroupRequest:
		r.Group, r.ProtocolType, r.SessionTimeoutMillis = "g", "consumer", 6000
		r.RebalanceTimeoutMillis = 10
		r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: "range"})
	case *kmsg.OffsetCommitRequest:
		r.Group, r.Generation = "g", -1
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = "t"
		ct.Partitions = append(ct.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
		r.Topics = append(r.Topics, ct)
	case *kmsg.CreatePartitionsRequest:
		ct := kmsg.NewCreatePartitionsRequestTopic()
		ct.Topic, ct.Count = "t", 3
		r.Topics = append(r.Topics, ct)
	case *kmsg.DeleteGroupsRequest:
		r.Groups = append(r.Groups, "g")
	case *kmsg.DescribeConfigsRequest:
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		r.Resources = append(r.Resources, dr)
	case *kmsg.AlterConfigsRequest:
		ar := kmsg.NewAlterConfigsRequestResource()
		ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		ar.Configs = append(ar.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: "retention.ms", Value: kmsg.StringPtr("1000")})
		r.Resources = append(r.Resources, ar)
	case *kmsg.IncrementalAlterConfigsRequest:
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		ir.Configs = append(ir.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "retention.ms", Value: kmsg.StringPtr("1000")})
		r.Resources = append(r.Resources, ir)
	case *kmsg.ListOffsetsRequest:
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "t"
		lt.Partitions = append(lt.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
		r.Topics = append(r.Topics, lt)
	}
}

// FuzzRequest feeds arbitrary request bodies through the decoder and, when
// one decodes, through its handler against the in-memory core and the
// response encoder: nothing may panic, whatever the bytes.
func FuzzRequest(f *testing.F) {
	for _, seed := range seedRequests(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		// A fresh core each time: topics an input created (with up to
		// MaxPartitions partitions) would slow every later input down.
		core := newFakeCore()
		defer core.coord.Close()
		if _, err := core.CreateTopic(context.Background(), "", topicConfig("t", 2)); err != nil {
			t.Fatal(err)
		}
		s := &Server{core: core, log: quietLogger(), host: "127.0.0.1", port: 9092}
		c := &conn{s: s, remoteHost: "127.0.0.1", log: s.log, fetches: newConnBudget(DefaultMaxConnFetchBytes)}
		h, req, err := parseRequest(body)
		if err != nil {
			if req != nil && h.key != apiVersionsKey {
				t.Fatalf("an error with a request for key %d", h.key)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		r := &request{ctx: ctx, c: c, hdr: h, kreq: req}
		finish := apis[h.key].handle(s, r)
		if resp := finish(); resp != nil {
			out := appendResponse(nil, h.corr, resp)
			if len(out) < 8 {
				t.Fatalf("response frame of %d bytes", len(out))
			}
		}
		if r.afterWrite != nil {
			r.afterWrite()
		}
	})
}
