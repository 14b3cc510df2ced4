package kafka

import (
	"context"
	"errors"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/routing"
)

// errorCode maps an error of the core or the coordinator to its Kafka error
// code: the one place the listener does so (the table is in docs/kafka.md
// "Errors" and docs/groups.md "Errors"). nil is 0.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	if code, ok := authorizationCode(err, auth.ResourceCluster); ok {
		return code
	}
	var notLeader *NotLeaderError
	var notCoord *NotCoordinatorError
	var outOfRange *broker.OutOfRangeError
	var txnErr *broker.TxnError
	switch {
	case errors.As(err, &txnErr):
		return txnCode(txnErr, false)
	case errors.As(err, &notLeader) && notLeader.Leader.ID == "":
		return kerr.LeaderNotAvailable.Code
	case errors.As(err, &notLeader):
		return kerr.NotLeaderForPartition.Code
	case errors.As(err, &notCoord):
		return kerr.NotCoordinator.Code
	case errors.As(err, &outOfRange), errors.Is(err, broker.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, broker.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, broker.ErrGroupSubscribed):
		return kerr.GroupSubscribedToTopic.Code
	case errors.Is(err, broker.ErrTopicNotReady):
		return kerr.RequestTimedOut.Code
	}
	if c, ok := kindCodes[kind.Of(err)]; ok {
		return c.Code
	}
	for _, m := range errorCodes {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

// kindCodes maps every one of kind.Kinds.
var kindCodes = map[error]*kerr.Error{
	kind.ErrNoLeader:        kerr.LeaderNotAvailable,
	kind.ErrUnavailable:     kerr.LeaderNotAvailable,
	kind.ErrShuttingDown:    kerr.NotLeaderForPartition,
	kind.ErrInvalidArgument: kerr.InvalidRequest,
	// A request this cluster's state refuses (a topic's replicas above
	// its node count, the last node's removal): its message says why.
	kind.ErrFailedPrecondition: kerr.InvalidRequest,
}

// errorCodes maps the packages' sentinels, checked in order; the first
// match wins.
var errorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{broker.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{broker.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{ErrTopicExists, kerr.TopicAlreadyExists},
	{broker.ErrTopicExists, kerr.TopicAlreadyExists},
	{ErrInvalidBatch, kerr.InvalidRecord},
	{ErrBatchTooLarge, kerr.MessageTooLarge},
	{ErrDiskFull, kerr.KafkaStorageError},
	{broker.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{broker.ErrInvalidConfig, kerr.InvalidConfig},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
	{broker.ErrPartitionClosed, kerr.NotLeaderForPartition},

	{groups.ErrUnknownMember, kerr.UnknownMemberID},
	{broker.ErrStaleMemberEpoch, kerr.StaleMemberEpoch},
	{groups.ErrIllegalGeneration, kerr.IllegalGeneration},
	{groups.ErrRebalanceInProgress, kerr.RebalanceInProgress},
	{groups.ErrInconsistentProtocol, kerr.InconsistentGroupProtocol},
	{groups.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
	{groups.ErrInvalidGroup, kerr.InvalidGroupID},
	{groups.ErrUnknownAssignor, kerr.InconsistentGroupProtocol},
	{groups.ErrGroupNotFound, kerr.GroupIDNotFound},
	{groups.ErrGroupNotEmpty, kerr.NonEmptyGroup},
	{groups.ErrCoordinatorClosed, kerr.CoordinatorNotAvailable},
	// A generation recorded concurrently: the join retries against the
	// coordinator.
	{offsets.ErrGenerationTaken, kerr.CoordinatorNotAvailable},

	// Bad input Kafka has no closer code for (the offset handlers answer
	// INVALID_GROUP_ID and OFFSET_METADATA_TOO_LARGE themselves).
	{offsets.ErrInvalidArgument, kerr.InvalidRequest},
	{offsets.ErrInvalidReset, kerr.InvalidRequest},
	{auth.ErrInvalid, kerr.InvalidRequest},
	{routing.ErrInvalidTopicName, kerr.InvalidTopicException},
	{errInternalTopicWrite, kerr.InvalidTopicException},
	{broker.ErrLogInvalidBatch, kerr.InvalidRecord},
	{batch.ErrCorrupt, kerr.CorruptMessage},
	{batch.ErrShort, kerr.CorruptMessage},
	{batch.ErrUnsupported, kerr.InvalidRecord},
	{broker.ErrUnknownNode, kerr.ResourceNotFound},
	{broker.ErrUserExists, kerr.DuplicateResource},
	{auth.ErrUnknownUser, kerr.ResourceNotFound},

	{auth.ErrMechanism, kerr.UnsupportedSaslMechanism},
	{auth.ErrAuthenticationFailed, kerr.SaslAuthenticationFailed},
	{auth.ErrUnauthenticated, kerr.SaslAuthenticationFailed},
	{auth.ErrPlaintextCredentials, kerr.SaslAuthenticationFailed},

	// The node's disk or descriptors: Kafka takes a log directory offline
	// on such an I/O error; clients refresh metadata and retry.
	{syscall.ENOSPC, kerr.KafkaStorageError},
	{syscall.EMFILE, kerr.KafkaStorageError},
	{syscall.ENFILE, kerr.KafkaStorageError},
	{broker.ErrLogClosed, kerr.NotLeaderForPartition},
}

// authorizationCode is the code of a request the core refused
// (errors.Is ErrDenied): by the type of the resource the core names
// (*auth.DeniedError), else by the resource the request is about
// (fallback). ok is false for any other error.
func authorizationCode(err error, fallback auth.ResourceType) (code int16, ok bool) {
	if !errors.Is(err, ErrDenied) && !errors.Is(err, auth.ErrDenied) {
		return 0, false
	}
	rt := fallback
	var denied *auth.DeniedError
	if errors.As(err, &denied) {
		rt = denied.Resource.Type
	}
	switch rt {
	case auth.ResourceTopic:
		return kerr.TopicAuthorizationFailed.Code, true
	case auth.ResourceGroup:
		return kerr.GroupAuthorizationFailed.Code, true
	case auth.ResourceTransactionalID:
		return kerr.TransactionalIDAuthorizationFailed.Code, true
	}
	return kerr.ClusterAuthorizationFailed.Code, true
}

// deniedCode maps an error of a request about a resource kind ("topic",
// "group", "cluster"): a refusal that does not name its resource is that
// kind's AUTHORIZATION_FAILED; other errors map as errorCode does.
func deniedCode(err error, resource string) int16 {
	rt := auth.ResourceCluster
	switch resource {
	case "topic":
		rt = auth.ResourceTopic
	case "group":
		rt = auth.ResourceGroup
	}
	if code, ok := authorizationCode(err, rt); ok {
		return code
	}
	return errorCode(err)
}

// groupCode maps an error of a group API (offsets included): "this node
// does not coordinate" or "does not lead the cluster metadata" is
// NOT_COORDINATOR, so the client finds the coordinator again.
func groupCode(err error) int16 {
	var notLeader *NotLeaderError
	switch {
	case errors.As(err, &notLeader):
		return kerr.NotCoordinator.Code
	case errors.Is(err, kind.ErrUnavailable), errors.Is(err, kind.ErrShuttingDown):
		return kerr.CoordinatorNotAvailable.Code
	}
	return deniedCode(err, "group")
}

// topicCode maps an error of a request about topics' data.
func topicCode(err error) int16 { return deniedCode(err, "topic") }

// adminCode maps an error of the topic-admin APIs: the core passes them on
// to the cluster metadata's leader, so a "not the leader" left is one with
// no leader known (or a forwarding that failed): NOT_CONTROLLER, and
// clients retry with Metadata's controller.
func adminCode(err error) int16 {
	var notLeader *NotLeaderError
	if errors.As(err, &notLeader) {
		return kerr.NotController.Code
	}
	return deniedCode(err, "topic")
}

// produceCode maps a produce error. A batch the core refused whose
// attributes name a codec Kafka does not define is
// UNSUPPORTED_COMPRESSION_TYPE; a compressed batch whose records do not
// decompress, or decompress to something malformed, is CORRUPT_MESSAGE, as
// Kafka answers it.
func produceCode(err error, b []byte) int16 {
	if errors.Is(err, ErrInvalidBatch) {
		if info, herr := batch.ParseHeader(b); herr == nil && info.Compressed() {
			if info.Attributes&batch.AttrCompressionMask > batch.CodecZstd {
				return kerr.UnsupportedCompressionType.Code
			}
			return kerr.CorruptMessage.Code
		}
	}
	return topicCode(err)
}

// The request's forms of the mappings above: each logs the error that
// fell through to UNKNOWN_SERVER_ERROR (see unexpected).
func (r *request) errorCode(err error) int16 { return r.unexpected(errorCode(err), err) }
func (r *request) groupCode(err error) int16 { return r.unexpected(groupCode(err), err) }
func (r *request) topicCode(err error) int16 { return r.unexpected(topicCode(err), err) }
func (r *request) adminCode(err error) int16 { return r.unexpected(adminCode(err), err) }
func (r *request) aclCode(err error) int16   { return r.unexpected(aclCode(err), err) }
func (r *request) produceCode(err error, b []byte) int16 {
	return r.unexpected(produceCode(err, b), err)
}

// unexpectedLogged holds the requests that logged an unexpected error, so
// a request logs one however many of its partitions fail with it; an
// entry goes when its request finishes (loggingUnexpected).
var unexpectedLogged sync.Map // *request → struct{}

// unexpected returns code, first logging err at Error when code is
// UNKNOWN_SERVER_ERROR: an error of a kind this listener does not map is
// a fault to find (the client learns nothing from that code), once per
// request.
func (r *request) unexpected(code int16, err error) int16 {
	if code != kerr.UnknownServerError.Code || err == nil {
		return code
	}
	if _, dup := unexpectedLogged.LoadOrStore(r, struct{}{}); !dup {
		r.c.log.Error("kafka request answered UNKNOWN_SERVER_ERROR: stored data that does not read, or an error of a kind the listener does not map",
			"api", kmsg.NameForKey(r.hdr.key), "client_id", r.hdr.clientID, "err", err)
	}
	return code
}

// loggingUnexpected is h forgetting, once the request finishes (or h
// panics), that it logged an unexpected error.
func loggingUnexpected(h handler) handler {
	return func(s *Server, r *request) (finish func() kmsg.Response) {
		defer func() {
			if finish == nil {
				unexpectedLogged.Delete(r)
			}
		}()
		f := h(s, r)
		return func() kmsg.Response {
			defer unexpectedLogged.Delete(r)
			return f()
		}
	}
}
