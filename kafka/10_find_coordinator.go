package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleFindCoordinator points every group at the node running the group
// coordinator (this one on a single node, the metadata leader in a
// cluster). Only group coordinators exist, and a client asking for another
// kind must fail at once rather than retry a coordinator that will never
// come: a transactional id (key type 1) gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as InitProducerId does, the one
// answer on which both franz-go and librdkafka stop (librdkafka retries
// every other code of a transaction coordinator lookup forever, franz-go
// every retriable one); any other key type INVALID_REQUEST.
func handleFindCoordinator(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	return func() kmsg.Response {
		c := s.findCoordinator(r, req.CoordinatorType)
		if req.Version < 4 {
			resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
			resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
			return resp
		}
		for _, key := range req.CoordinatorKeys {
			c.Key = key
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	}
}

func (s *Server) findCoordinator(r *request, keyType int8) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.NodeID, c.Port = -1, -1
	fail := func(e *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = e.Code, kmsg.StringPtr(msg)
		return c
	}
	switch keyType {
	case 0:
	case 1:
		return fail(kerr.TransactionalIDAuthorizationFailed, "logd does not support transactions")
	default:
		return fail(kerr.InvalidRequest, "logd coordinates consumer groups only (key type 0)")
	}
	err := s.core.CoordinatesGroups()
	if err == nil {
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
