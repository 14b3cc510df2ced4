package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/logd/logd/broker"
)

// consumerCore is what the consumer-group APIs of KIP-848 (68, 69) need
// of the core (docs/groups.md, "Server-assigned groups"); a core without
// it answers them UNSUPPORTED_VERSION, and clients fall back to the
// classic protocol.
type consumerCore interface {
	ConsumerHeartbeat(ctx context.Context, r broker.ConsumerHeartbeatRequest) (broker.ConsumerHeartbeatResult, error)
	DescribeConsumerGroup(ctx context.Context, p Principal, group string) (broker.ConsumerGroupDescription, error)
	ValidateOffsetFetch(ctx context.Context, p Principal, group, member string, epoch int32) error
	TopicByID(id [16]byte) (string, bool)
	TopicIDOf(name string) ([16]byte, bool)
}

var _ consumerCore = (*broker.Broker)(nil)

// consumerCode is a consumer code's Kafka error.
func consumerCode(c broker.ConsumerCode) *kerr.Error {
	switch c {
	case broker.ConsumerOK:
		return nil
	case broker.ConsumerUnknownMember:
		return kerr.UnknownMemberID
	case broker.ConsumerFencedMemberEpoch:
		return kerr.FencedMemberEpoch
	case broker.ConsumerUnreleasedInstance:
		return kerr.UnreleasedInstanceID
	case broker.ConsumerUnsupportedAssignor:
		return kerr.UnsupportedAssignor
	case broker.ConsumerNotConsumerGroup:
		return kerr.GroupIDNotFound
	}
	return kerr.InvalidRequest
}

// consumerErr is the code and message of a heartbeat's outcome: its
// consumer code, else its error (as the group APIs map them).
func (r *request) consumerErr(code broker.ConsumerCode, msg string, err error) (int16, *string) {
	return r.outcomeErr(consumerCode(code), msg, err)
}

// outcomeErr is the code and message of a group protocol's outcome: e
// (with msg, or e's own message), else err as the group APIs map it.
func (r *request) outcomeErr(e *kerr.Error, msg string, err error) (int16, *string) {
	if e != nil {
		if msg == "" {
			msg = e.Message
		}
		return e.Code, &msg
	}
	if err == nil {
		return 0, nil
	}
	m := err.Error()
	return r.groupCode(err), &m
}
