package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/offsets"
)

// handleOffsetFetch answers a group's committed offsets through the core:
// the partitions asked for (offset -1 where nothing is committed), or every
// committed one when Topics is null (v2+). A group name the offset store
// refuses (empty, or over offsets.MaxGroupBytes) is INVALID_GROUP_ID.
func handleOffsetFetch(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	return func() kmsg.Response {
		var names []string
		for _, rt := range req.Topics {
			names = append(names, rt.Topic)
		}
		if code := invalidGroupCode(req.Group); code != 0 {
			return offsetFetchFailed(req, resp, code)
		}
		cs, err := s.core.FetchOffsets(r.ctx, r.c.principal, req.Group, names)
		if err != nil {
			return offsetFetchFailed(req, resp, r.groupCode(err))
		}
		if req.Topics == nil {
			resp.Topics = offsetFetchAll(cs)
			return resp
		}
		got := make(map[string]map[int32]*offsets.Committed)
		for i := range cs {
			c := &cs[i]
			if got[c.Topic] == nil {
				got[c.Topic] = make(map[int32]*offsets.Committed)
			}
			got[c.Topic][c.Partition] = c
		}
		for _, rt := range req.Topics {
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				t.Partitions = append(t.Partitions, offsetFetchPartition(p, got[rt.Topic][p], 0))
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
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
