package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"syscall"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/routing"
)

// errorBody is every failed request's answer. Error says what went wrong
// and what to do; the other fields are set for the errors they belong to.
type errorBody struct {
	Error string `json:"error"`
	// Leader is the node to ask instead (421 not leader, 503 not
	// coordinator).
	Leader *nodeJSON `json:"leader,omitempty"`
	// LogStart and HighWatermark are the valid offsets' range (416).
	LogStart      *int64 `json:"log_start,omitempty"`
	HighWatermark *int64 `json:"high_watermark,omitempty"`
}

// writeError answers status with a formatted message.
func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeErrorBody(w, status, errorBody{Error: fmt.Sprintf(format, args...)})
}

func writeErrorBody(w http.ResponseWriter, status int, b errorBody) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(b)
}

// writeCoreError answers a core error with its status (docs/http.md's
// table); it is the one place that mapping lives.
func writeCoreError(w http.ResponseWriter, err error) {
	status, body := errorStatus(err)
	switch status {
	case http.StatusInternalServerError:
		// An error of a kind the API does not map, or stored data that
		// does not read: a fault to find, logged (once: this writes the
		// response) where the node's log goes.
		slog.Error("HTTP request answered 500", "err", err)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Basic realm="logd", charset="UTF-8"`)
	}
	writeErrorBody(w, status, body)
}

// errorStatus maps a core error to a status and body.
func errorStatus(err error) (int, errorBody) {
	body := errorBody{Error: err.Error()}
	var notLeader *broker.NotLeaderError
	var notCoord *broker.NotCoordinatorError
	var oor *broker.OutOfRangeError
	var conflict *broker.KeyConflictError
	switch {
	case errors.As(err, &conflict):
		return http.StatusPreconditionFailed, body
	case errors.As(err, &notLeader):
		if notLeader.Leader.ID == "" {
			body.Error = fmt.Sprintf("%s has no leader right now (an election is under way, or too few replicas are up): retry shortly", notLeader.What)
			return http.StatusServiceUnavailable, body
		}
		n := toNodeJSON(notLeader.Leader)
		body.Leader = &n
		body.Error = fmt.Sprintf("this node does not lead %s: send the request to node %s at http://%s", notLeader.What, n.ID, n.HTTPAddr)
		if n.HTTPAddr == "" {
			body.Error = fmt.Sprintf("this node does not lead %s: node %s does, whose HTTP address is not known here yet; retry shortly", notLeader.What, n.ID)
		}
		return http.StatusMisdirectedRequest, body
	case errors.As(err, &notCoord):
		if notCoord.Leader.ID != "" {
			n := toNodeJSON(notCoord.Leader)
			body.Leader = &n
			body.Error += fmt.Sprintf(" (at http://%s)", n.HTTPAddr)
		}
		return http.StatusServiceUnavailable, body
	case errors.As(err, &oor):
		body.LogStart, body.HighWatermark = &oor.StartOffset, &oor.HighWatermark
		body.Error = fmt.Sprintf("offset %d is out of range: valid offsets are %d to %d (the high watermark, where new records go)",
			oor.Offset, oor.StartOffset, oor.HighWatermark)
		return http.StatusRequestedRangeNotSatisfiable, body
	case errors.Is(err, groups.ErrGroupNotFound):
		return http.StatusNotFound, body
	}
	if m, ok := kindStatus[kind.Of(err)]; ok {
		if m.hint != "" {
			body.Error += ": " + m.hint
		}
		return m.status, body
	}
	for _, e := range badInput {
		if errors.Is(err, e) {
			return http.StatusBadRequest, body
		}
	}
	for _, m := range statusOf {
		if errors.Is(err, m.err) {
			if m.hint != "" {
				body.Error += ": " + m.hint
			}
			return m.status, body
		}
	}
	if isGroupsError(err) {
		return http.StatusConflict, body
	}
	return http.StatusInternalServerError, body
}

// kindStatus maps every one of kind.Kinds to a status, with a hint
// appended to the error's own message.
var kindStatus = map[error]struct {
	status int
	hint   string
}{
	kind.ErrInvalidArgument:    {http.StatusBadRequest, ""},
	kind.ErrFailedPrecondition: {http.StatusConflict, ""},
	kind.ErrShuttingDown:       {http.StatusServiceUnavailable, "retry against another node or after restart"},
	kind.ErrUnavailable:        {http.StatusServiceUnavailable, ""},
	kind.ErrNoLeader:           {http.StatusServiceUnavailable, "retry shortly"},
}

// statusOf maps the packages' sentinels to statuses, first match wins,
// with a hint appended to the error's own message.
var statusOf = []struct {
	err    error
	status int
	hint   string
}{
	{broker.ErrUnknownTopic, http.StatusNotFound, "see GET /v1/topics; create it with logd topic create"},
	{broker.ErrUnknownPartition, http.StatusNotFound, "partitions are numbered from 0; see GET /v1/topics/{topic}"},
	{broker.ErrUnknownNode, http.StatusNotFound, ""},
	{broker.ErrUnknownUser, http.StatusNotFound, "see logd user list"},
	{broker.ErrTopicExists, http.StatusConflict, ""},
	{broker.ErrUserExists, http.StatusConflict, ""},
	{broker.ErrOffsetOutOfRange, http.StatusRequestedRangeNotSatisfiable, ""},
	{broker.ErrBatchTooLarge, http.StatusRequestEntityTooLarge, "send fewer or smaller records per request"},
	{broker.ErrDiskFull, http.StatusInsufficientStorage, "retry after an operator frees space (or retention trims)"},
	{syscall.ENOSPC, http.StatusInsufficientStorage, "the node's disk is full: retry after an operator frees space"},
	{broker.ErrOutOfOrderSequence, http.StatusConflict, "an Idempotency-Key was reused with other records: use a new key for new records"},
	{broker.ErrDenied, http.StatusForbidden, ""},
	{auth.ErrAuthenticationFailed, http.StatusUnauthorized, ""},
	{auth.ErrUnauthenticated, http.StatusUnauthorized, "send Basic credentials over https, or a client certificate"},
	{auth.ErrPlaintextCredentials, http.StatusUnauthorized, "use https, or a client certificate"},
	{offsets.ErrGenerationTaken, http.StatusConflict, "join the group again"},
	{broker.ErrLogClosed, http.StatusServiceUnavailable, "the node is shutting down: retry against another node or after restart"},
	{broker.ErrPartitionClosed, http.StatusServiceUnavailable, "the node is shutting down: retry against another node or after restart"},
	{groups.ErrCoordinatorClosed, http.StatusServiceUnavailable, "retry shortly"},
	{syscall.EMFILE, http.StatusServiceUnavailable, "the node is out of file descriptors: retry later"},
	{syscall.ENFILE, http.StatusServiceUnavailable, "the node is out of file descriptors: retry later"},
	{context.DeadlineExceeded, http.StatusGatewayTimeout, "retry (with the same Idempotency-Key for a produce)"},
	{context.Canceled, http.StatusServiceUnavailable, "the request was canceled (the node is shutting down, or the client went away): retry"},
	{broker.ErrLogCorrupt, http.StatusInternalServerError, "stored data is unreadable: tell the operator"},
	{offsets.ErrCorrupt, http.StatusInternalServerError, "stored offsets are unreadable: tell the operator"},
}

// badInput are the kinds of error that mean the request was wrong (400).
var badInput = []error{broker.ErrInvalidBatch, broker.ErrInvalidConfig,
	routing.ErrInvalidTopicName, batch.ErrCorrupt, batch.ErrShort, batch.ErrUnsupported, broker.ErrLogInvalidBatch,
	offsets.ErrInvalidArgument, offsets.ErrInvalidReset, auth.ErrInvalid, auth.ErrMechanism}

// isGroupsError reports a coordinator error (docs/groups.md: 409).
func isGroupsError(err error) bool {
	for _, e := range []error{groups.ErrUnknownMember, groups.ErrIllegalGeneration, groups.ErrRebalanceInProgress,
		groups.ErrInconsistentProtocol, groups.ErrInvalidSessionTimeout, groups.ErrInvalidGroup,
		groups.ErrUnknownAssignor, groups.ErrGroupNotEmpty} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
