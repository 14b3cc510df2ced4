package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/offsets"
)

// handleOffsetFetch answers a group's committed offsets through the core:
// the partitions asked for (offset -1 where nothing is committed), or every
// committed one when Topics is null (v2+). A group name the offset store
// refuses (empty, or over offsets.MaxGroupBytes) is INVALID_GROUP_ID.
// v8+ asks for several groups, each answered on its own (an error in the
// group's error code); v9 names the member and its epoch, checked as
// Kafka checks a KIP-848 consumer group's (broker.ValidateOffsetFetch).
func handleOffsetFetch(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	return func() kmsg.Response {
		if req.Version >= 8 {
			for _, g := range req.Groups {
				resp.Groups = append(resp.Groups, r.offsetFetchGroup(s, g))
			}
			return resp
		}
		var asked []offsetFetchAsk
		for _, rt := range req.Topics {
			asked = append(asked, offsetFetchAsk{rt.Topic, rt.Partitions})
		}
		topics, code := r.offsetFetch(s, req.Group, asked, req.Topics == nil)
		if code != 0 {
			return offsetFetchFailed(req, resp, code)
		}
		resp.Topics = topics
		return resp
	}
}

// offsetFetchAsk is one topic's partitions an offset fetch asks for.
type offsetFetchAsk struct {
	topic      string
	partitions []int32
}

// offsetFetch is group's committed offsets of the partitions asked for,
// or of every partition (all), or the error code of the fetch.
func (r *request) offsetFetch(s *Server, group string, asked []offsetFetchAsk, all bool) ([]kmsg.OffsetFetchResponseTopic, int16) {
	if code := invalidGroupCode(group); code != 0 {
		return nil, code
	}
	var names []string
	for _, a := range asked {
		names = append(names, a.topic)
	}
	cs, err := s.core.FetchOffsets(r.ctx, r.c.principal, group, names)
	if err != nil {
		return nil, r.groupCode(err)
	}
	if all {
		return offsetFetchAll(cs), 0
	}
	got := make(map[string]map[int32]*offsets.Committed)
	for i := range cs {
		c := &cs[i]
		if got[c.Topic] == nil {
			got[c.Topic] = make(map[int32]*offsets.Committed)
		}
		got[c.Topic][c.Partition] = c
	}
	out := []kmsg.OffsetFetchResponseTopic{}
	for _, a := range asked {
		t := kmsg.NewOffsetFetchResponseTopic()
		t.Topic = a.topic
		for _, p := range a.partitions {
			t.Partitions = append(t.Partitions, offsetFetchPartition(p, got[a.topic][p], 0))
		}
		out = append(out, t)
	}
	return out, 0
}

// offsetFetchGroup answers one group of a v8+ fetch: an error is the
// group's error code, with no topics (as Kafka answers it).
func (r *request) offsetFetchGroup(s *Server, rg kmsg.OffsetFetchRequestGroup) kmsg.OffsetFetchResponseGroup {
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group = rg.Group
	member := ""
	if rg.MemberID != nil {
		member = *rg.MemberID
	}
	if cc, ok := s.core.(consumerCore); ok && invalidGroupCode(rg.Group) == 0 {
		if err := cc.ValidateOffsetFetch(r.ctx, r.c.principal, rg.Group, member, rg.MemberEpoch); err != nil {
			g.ErrorCode = r.groupCode(err)
			return g
		}
	}
	var asked []offsetFetchAsk
	for _, rt := range rg.Topics {
		asked = append(asked, offsetFetchAsk{rt.Topic, rt.Partitions})
	}
	topics, code := r.offsetFetch(s, rg.Group, asked, rg.Topics == nil)
	if code != 0 {
		g.ErrorCode = code
		return g
	}
	for _, t := range topics {
		gt := kmsg.NewOffsetFetchResponseGroupTopic()
		gt.Topic = t.Topic
		for _, p := range t.Partitions {
			gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			gt.Partitions = append(gt.Partitions, gp)
		}
		g.Topics = append(g.Topics, gt)
	}
	return g
}

// offsetFetchFailed is the answer of a fetch that failed with code: in
// the response (v2+) and in every partition asked for.
func offsetFetchFailed(req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse, code int16) kmsg.Response {
	resp.ErrorCode = code
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetFetchResponseTopic()
		t.Topic = rt.Topic
		for _, p := range rt.Partitions {
			t.Partitions = append(t.Partitions, offsetFetchPartition(p, nil, code))
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func offsetFetchPartition(partition int32, c *offsets.Committed, code int16) kmsg.OffsetFetchResponseTopicPartition {
	p := kmsg.NewOffsetFetchResponseTopicPartition()
	p.Partition, p.ErrorCode, p.Offset, p.LeaderEpoch = partition, code, -1, -1
	p.Metadata = kmsg.StringPtr("")
	if c != nil {
		p.Offset, p.Metadata = c.Offset, kmsg.StringPtr(c.Metadata)
	}
	return p
}

func offsetFetchAll(cs []offsets.Committed) []kmsg.OffsetFetchResponseTopic {
	var out []kmsg.OffsetFetchResponseTopic
	idx := map[string]int{}
	for i := range cs {
		c := &cs[i]
		j, ok := idx[c.Topic]
		if !ok {
			j = len(out)
			idx[c.Topic] = j
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic = c.Topic
			out = append(out, t)
		}
		out[j].Partitions = append(out[j].Partitions, offsetFetchPartition(c.Partition, c, 0))
	}
	return out
}
