package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// shareDeleteOffsetsCore is what DeleteShareGroupOffsets needs of the core.
type shareDeleteOffsetsCore interface {
	DeleteShareGroupOffsets(ctx context.Context, p Principal, group string, topics []string) ([]broker.ShareTopicResult, error)
	TopicIDOf(name string) ([16]byte, bool)
}

var _ shareDeleteOffsetsCore = (*broker.Broker)(nil)

// handleDeleteShareGroupOffsets forgets a share group's progress on the
// named topics (KIP-932): each partition starts again where
// share.auto.offset.reset says (broker.DeleteShareGroupOffsets). A group
// with members is NON_EMPTY_GROUP; a principal without delete on the
// group GROUP_AUTHORIZATION_FAILED, one without read on a topic that
// topic's TOPIC_AUTHORIZATION_FAILED.
func handleDeleteShareGroupOffsets(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	return func() kmsg.Response {
		sc, ok := s.core.(shareDeleteOffsetsCore)
		if !ok {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp
		}
		topics := make([]string, 0, len(req.Topics))
		for _, t := range req.Topics {
			topics = append(topics, t.Topic)
		}
		done, err := sc.DeleteShareGroupOffsets(r.ctx, r.c.principal, req.GroupID, topics)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = r.shareErr(0, "", err)
			return resp
		}
		for _, d := range done {
			t := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			t.Topic = d.Topic
			t.TopicID, _ = sc.TopicIDOf(d.Topic)
			if d.Err != nil {
				t.ErrorCode, t.ErrorMessage = r.sharePartitionErr(0, d.Err)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}
