package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/logd/logd/broker"
)

// shareCore is what the share-group APIs (76 to 79) need of the core
// (docs/share-groups.md); a core without it answers them
// UNSUPPORTED_VERSION.
type shareCore interface {
	ShareHeartbeat(ctx context.Context, r broker.ShareHeartbeatRequest) (broker.ShareHeartbeatResult, error)
	DescribeShareGroup(ctx context.Context, p Principal, group string) (broker.ShareGroupDescription, error)
	ShareFetch(ctx context.Context, r broker.ShareFetchRequest) (broker.ShareFetchResult, error)
	ShareAcknowledge(ctx context.Context, r broker.ShareFetchRequest) (broker.ShareFetchResult, error)
	ShareConnClosed(conn uint64)
	TopicByID(id [16]byte) (string, bool)
	TopicIDOf(name string) ([16]byte, bool)
}

var _ shareCore = (*broker.Broker)(nil)

// shareCode is a share code's Kafka error.
func shareCode(c broker.ShareCode) *kerr.Error {
	switch c {
	case broker.ShareOK:
		return nil
	case broker.ShareUnknownMember:
		return kerr.UnknownMemberID
	case broker.ShareFencedMemberEpoch:
		return kerr.FencedMemberEpoch
	case broker.ShareInvalidRecordState:
		return kerr.InvalidRecordState
	case broker.ShareSessionNotFound:
		return kerr.ShareSessionNotFound
	case broker.ShareInvalidSessionEpoch:
		return kerr.InvalidShareSessionEpoch
	case broker.ShareUnsupported:
		return kerr.UnsupportedVersion
	}
	return kerr.InvalidRequest
}

// shareErr is the code and message of a share result's outcome: its share
// code, else its error (denials of the group as GROUP_AUTHORIZATION_FAILED).
func (r *request) shareErr(code broker.ShareCode, msg string, err error) (int16, *string) {
	return r.outcomeErr(shareCode(code), msg, err)
}

// sharePartitionErr is a partition's code: a share code, else its error
// (denials of the topic as TOPIC_AUTHORIZATION_FAILED).
func (r *request) sharePartitionErr(code broker.ShareCode, err error) (int16, *string) {
	if e := shareCode(code); e != nil {
		msg := e.Message
		if err != nil {
			msg = err.Error()
		}
		return e.Code, &msg
	}
	if err == nil {
		return 0, nil
	}
	m := err.Error()
	return r.topicCode(err), &m
}

func shareAcks[T any](batches []T, get func(T) (int64, int64, []int8)) []broker.ShareAck {
	var out []broker.ShareAck
	for _, b := range batches {
		first, last, types := get(b)
		a := broker.ShareAck{First: first, Last: last}
		for _, t := range types {
			a.Types = append(a.Types, broker.ShareAckType(t))
		}
		out = append(out, a)
	}
	return out
}
