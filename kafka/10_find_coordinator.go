package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
)

// handleFindCoordinator points every group and transactional id (key type
// 1) at the node running the group and transaction coordinators (this
// one on a single node, the metadata leader in a cluster). A client
// asking for another kind must fail at once rather than retry a
// coordinator that will never come: INVALID_REQUEST. A transactional id
// the principal may not describe, or any on a core without transactions,
// gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the one answer on which both
// franz-go and librdkafka stop.
func handleFindCoordinator(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	return func() kmsg.Response {
		if req.Version < 4 {
			c := s.findCoordinator(r, req.CoordinatorType, req.CoordinatorKey)
			resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
			resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
			return resp
		}
		for _, key := range req.CoordinatorKeys {
			c := s.findCoordinator(r, req.CoordinatorType, key)
			c.Key = key
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	}
}

func (s *Server) findCoordinator(r *request, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.NodeID, c.Port = -1, -1
	fail := func(e *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = e.Code, kmsg.StringPtr(msg)
		return c
	}
	var err error
	switch keyType {
	case 0:
		err = s.core.CoordinatesGroups()
	case 1:
		tc := s.txnCore()
		if tc == nil {
			return fail(errNoTxns, "this node does not serve transactions")
		}
		if err = tc.CoordinatesTxn(r.ctx, r.c.principal, key); err != nil {
			if code, ok := authorizationCode(err, auth.ResourceTransactionalID); ok {
				return fail(kerr.ErrorForCode(code).(*kerr.Error), err.Error())
			}
		}
	default:
		return fail(kerr.InvalidRequest, "logd coordinates consumer groups (key type 0) and transactions (key type 1) only")
	}
	if err == nil || keyType == 0 && s.coordinatorBetween(err) {
		c.NodeID, c.Host, c.Port = s.core.LocalNode().KafkaID, s.host, s.port
		return c
	}
	var nc *NotCoordinatorError
	if !errors.As(err, &nc) {
		return fail(kerr.CoordinatorNotAvailable, err.Error())
	}
	cv, _ := s.clusterView(r.ctx)
	for _, b := range cv.brokers {
		if id, ok := cv.ids[nc.Leader.ID]; ok && b.NodeID == id {
			c.NodeID, c.Host, c.Port = b.NodeID, b.Host, b.Port
			return c
		}
	}
	return fail(kerr.CoordinatorNotAvailable, "the group coordinator's node has no Kafka listener known here")
}

// coordinatorBetween reports whether err, the group coordinator's
// absence here, is one that passes without a client doing anything: no
// node leads the cluster metadata (an election is under way), or this
// node leads it and its coordinator is taking the groups over. Kafka
// answers FindCoordinator then with a broker (the one its metadata names,
// which answers the group's requests NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS until it coordinates), and clients retry
// those requests; COORDINATOR_NOT_AVAILABLE from FindCoordinator is not
// retried by every client (franz-go fails an OffsetFetch at once on it),
// so a member that fetches its offsets during an election would fail.
// So this node is answered: its group requests say NOT_COORDINATOR (no
// leader) or COORDINATOR_NOT_AVAILABLE (taking over), both retried, until
// the coordinator is known. A node shutting down is not.
func (s *Server) coordinatorBetween(err error) bool {
	if errors.Is(err, kind.ErrShuttingDown) {
		return false
	}
	var nc *NotCoordinatorError
	if errors.As(err, &nc) {
		return nc.Leader.ID == ""
	}
	return true
}
