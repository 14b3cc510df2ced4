package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/offsets"
)

// handleOffsetCommit stores a group's offsets through the core, which
// fences the commit with the coordinator (member id and generation; a
// consumer that assigns itself partitions commits with "" and -1).
//
// A group name the offset store refuses (empty, or over
// offsets.MaxGroupBytes) is INVALID_GROUP_ID for every partition. A
// partition whose offset is negative is INVALID_REQUEST (logd stores the
// next offset to read, never Kafka's -1 "no offset": Kafka's own clients
// do not commit negative offsets), one whose metadata is over
// offsets.MaxMetadataBytes OFFSET_METADATA_TOO_LARGE; the other
// partitions are stored, as Kafka does. Those are stored all or nothing,
// so they share one code.
func handleOffsetCommit(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	return func() kmsg.Response {
		gen, member := req.Generation, req.MemberID
		if req.Version == 0 {
			gen, member = -1, ""
		}
		codes, cs := commitCodes(r, req)
		if len(cs) > 0 {
			code := r.groupCode(s.core.CommitOffsets(r.ctx, r.c.principal, req.Group, member, gen, cs))
			for i := range codes {
				for j, c := range codes[i] {
					if c < 0 {
						codes[i][j] = code
					}
				}
			}
		}
		for i, rt := range req.Topics {
			t := kmsg.NewOffsetCommitResponseTopic()
			t.Topic = rt.Topic
			for j, rp := range rt.Partitions {
				p := kmsg.NewOffsetCommitResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, codes[i][j]
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}

// commitCodes checks an OffsetCommit's group and partitions: codes holds
// each partition's code (by topic, then partition, as in the request), -1
// for those to store (cs). The first refusal is logged: Kafka's response
// has no message to say why.
func commitCodes(r *request, req *kmsg.OffsetCommitRequest) (codes [][]int16, cs []offsets.Committed) {
	var why error
	gcode := invalidGroupCode(req.Group)
	if gcode != 0 {
		why = fmt.Errorf("consumer group name %q: %s", clip(req.Group), invalidGroupWhy)
	}
	codes = make([][]int16, len(req.Topics))
	for i, rt := range req.Topics {
		codes[i] = make([]int16, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			c := offsets.Committed{Topic: rt.Topic, Partition: rp.Partition, Offset: rp.Offset}
			if rp.Metadata != nil {
				c.Metadata = *rp.Metadata
			}
			code := gcode
			switch {
			case code != 0:
			case c.Offset < 0:
				code = kerr.InvalidRequest.Code
				why = firstErr(why, fmt.Errorf("offset %d for %s/%d is negative: commit the next offset to read (>= 0)", c.Offset, c.Topic, c.Partition))
			case len(c.Metadata) > offsets.MaxMetadataBytes:
				code = kerr.OffsetMetadataTooLarge.Code
				why = firstErr(why, fmt.Errorf("metadata for %s/%d is %d bytes, at most %d allowed", c.Topic, c.Partition, len(c.Metadata), offsets.MaxMetadataBytes))
			default:
				code = -1
				cs = append(cs, c)
			}
			codes[i][j] = code
		}
	}
	if why != nil {
		r.c.log.Info("kafka offset commit refused in part", "client_id", r.hdr.clientID, "group", clip(req.Group), "err", why)
	}
	return codes, cs
}

// invalidGroupWhy says which group names the offset store takes.
var invalidGroupWhy = fmt.Sprintf("a consumer group name is 1 to %d bytes", offsets.MaxGroupBytes)

// invalidGroupCode is INVALID_GROUP_ID for a group name the offset store
// refuses, else 0.
func invalidGroupCode(group string) int16 {
	if group == "" || len(group) > offsets.MaxGroupBytes {
		return kerr.InvalidGroupID.Code
	}
	return 0
}

// firstErr is the first of two errors that is not nil.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// clip shortens a client's string for the log.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
