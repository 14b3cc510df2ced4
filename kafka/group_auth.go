package kafka

import (
	"github.com/logd/logd/auth"
	"github.com/logd/logd/groups"
)

// groupCoordinator returns the group coordinator for a request about
// group, once the connection's principal may do op on it. The coordinator
// takes no principal, so the core's decision is asked here, as the gRPC
// Groups service does: join, sync, heartbeat and leave need read on the
// group, describe needs describe (docs/security.md).
func (s *Server) groupCoordinator(r *request, op auth.Operation, group string) (*groups.Coordinator, error) {
	if err := s.core.Authorize(r.ctx, r.c.principal, op, auth.Group(group)); err != nil {
		return nil, err
	}
	return s.core.Coordinator()
}
