package cluster

import (
	"context"
	"errors"
	"strconv"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/routing"
)

// A peer call's error crosses the wire as its kind's name and its message
// (peerAnswer), and comes back as an error of the same kind: errors.Is
// matches the same sentinel on the calling node, so its front-ends map it
// as they would have mapped the error on the node that answered. The
// names are part of the protocol: never change one.

// Kinds with fields of their own.
const (
	kindNotLeader    = "not_leader"
	kindOtherCluster = "other_cluster"
	kindOutOfRange   = "out_of_range"
	kindUnavailable  = "unavailable"
)

// peerKinds are the sentinels carried by name, the first errors.Is
// matches wins: the packages' own before the generic kinds they may wrap.
var peerKinds = []struct {
	name string
	err  error
}{
	{"topic_not_found", partition.ErrTopicNotFound},
	{"partition_not_found", partition.ErrPartitionNotFound},
	{"topic_exists", partition.ErrTopicExists},
	{"invalid_config", partition.ErrInvalidConfig},
	{"out_of_order_sequence", partition.ErrOutOfOrderSequence},
	{"partition_closed", partition.ErrClosed},
	{"invalid_topic_name", routing.ErrInvalidTopicName},
	{"unknown_node", ErrUnknownNode},
	{"offset_out_of_range", log.ErrOffsetOutOfRange},
	{"log_closed", log.ErrClosed},
	{"invalid_batch", log.ErrInvalidBatch},
	{"offsets_invalid_argument", offsets.ErrInvalidArgument},
	{"offsets_invalid_reset", offsets.ErrInvalidReset},
	{"generation_taken", offsets.ErrGenerationTaken},
	{"topic_not_ready", ErrTopicNotReady},
	{"canceled", context.Canceled},
	{"deadline_exceeded", context.DeadlineExceeded},
	{"shutting_down", kind.ErrShuttingDown},
	{"no_leader", kind.ErrNoLeader},
	{kindUnavailable, kind.ErrUnavailable},
	{"failed_precondition", kind.ErrFailedPrecondition},
	{"invalid_argument", kind.ErrInvalidArgument},
}

// PeerError is an error of a kind this package does not know, carried by
// a peer call: the node's core names its own kinds (Kind) and reads them
// back on the calling node. A handler that returns one sends it as it
// is; a kind the calling node does not know either (a node of another
// version) is kind.ErrUnavailable there.
type PeerError struct {
	Kind    string
	Message string
	Detail  map[string]string // the kind's fields, by name
}

func (e *PeerError) Error() string { return e.Message }

// Unwrap makes an unknown kind kind.ErrUnavailable.
func (e *PeerError) Unwrap() error { return kind.ErrUnavailable }

// answerOf is err as a call's answer.
func answerOf(err error) peerAnswer {
	var pe *PeerError
	var nl *NotLeaderError
	var oor *log.OutOfRangeError
	switch {
	case err == nil:
		return peerAnswer{}
	case errors.As(err, &pe):
		return peerAnswer{Kind: pe.Kind, Message: pe.Message, Detail: pe.Detail}
	case errors.As(err, &nl):
		return peerAnswer{Kind: kindNotLeader, Message: err.Error(), Leader: nl.Leader, What: nl.What, Touched: !nl.Untouched}
	case errors.Is(err, errOther):
		return peerAnswer{Kind: kindOtherCluster, Message: err.Error()}
	case errors.As(err, &oor):
		return peerAnswer{Kind: kindOutOfRange, Message: err.Error(), Detail: map[string]string{
			"offset": strconv.FormatInt(oor.Offset, 10), "start": strconv.FormatInt(oor.StartOffset, 10),
			"high_watermark": strconv.FormatInt(oor.HighWatermark, 10)}}
	}
	for _, k := range peerKinds {
		if errors.Is(err, k.err) {
			return peerAnswer{Kind: k.name, Message: err.Error()}
		}
	}
	// Any other failure: the caller may retry, as for a node that did
	// not answer.
	return peerAnswer{Kind: kindUnavailable, Message: err.Error()}
}

// err is the answer's error, of the kind the other node answered.
func (a peerAnswer) err() error {
	switch a.Kind {
	case "":
		return nil
	case kindNotLeader:
		what := a.What
		if what == "" {
			what = metaWhat
		}
		return &NotLeaderError{What: what, Leader: a.Leader, Untouched: !a.Touched}
	case kindOtherCluster:
		return errors.Join(errOther, kind.Errorf(kind.ErrFailedPrecondition, "%s", a.Message))
	case kindOutOfRange:
		n := func(k string) int64 { v, _ := strconv.ParseInt(a.Detail[k], 10, 64); return v }
		return &log.OutOfRangeError{Offset: n("offset"), StartOffset: n("start"), HighWatermark: n("high_watermark")}
	}
	for _, k := range peerKinds {
		if k.name == a.Kind {
			return kind.Errorf(k.err, "%s", a.Message)
		}
	}
	return &PeerError{Kind: a.Kind, Message: a.Message, Detail: a.Detail}
}
