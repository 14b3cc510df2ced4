package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
)

// shareConfigCore is what a share group's configs (IncrementalAlterConfigs
// of resource type GROUP) need of the core.
type shareConfigCore interface {
	AlterShareGroupConfig(ctx context.Context, p Principal, group string, change map[string]*string, validateOnly bool) error
}

var _ shareConfigCore = (*broker.Broker)(nil)

// alterGroupConfigs answers one GROUP resource of IncrementalAlterConfigs:
// a share group's configs (share.auto.offset.reset,
// share.record.lock.duration.ms, share.delivery.attempt.limit,
// share.redelivery.backoff.base.ms, share.redelivery.backoff.max.ms), SET or
// DELETE (back to the default). A config logd does not know, or a bad
// value, is INVALID_CONFIG; a principal without alter on the group gets
// GROUP_AUTHORIZATION_FAILED.
func (s *Server) alterGroupConfigs(r *request, group string, cs []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) (int16, *string) {
	sc, ok := s.core.(shareConfigCore)
	if !ok {
		return resourceError(kmsg.ConfigResourceTypeGroupConfig)
	}
	change := map[string]*string{}
	for _, c := range cs {
		if _, dup := change[c.Name]; dup {
			return kerr.InvalidConfig.Code, kmsg.StringPtr(fmt.Sprintf("config %s is given twice", c.Name))
		}
		switch {
		case c.Op == kmsg.IncrementalAlterConfigOpSet && c.Value != nil:
			change[c.Name] = c.Value
		case c.Op == kmsg.IncrementalAlterConfigOpDelete:
			change[c.Name] = nil
		default:
			return kerr.InvalidConfig.Code, kmsg.StringPtr(fmt.Sprintf("%s %s: a share group's configs take SET with a value, or DELETE", c.Op, c.Name))
		}
	}
	err := sc.AlterShareGroupConfig(r.ctx, r.c.principal, group, change, validateOnly)
	switch {
	case err == nil:
		return 0, nil
	case errors.Is(err, kind.ErrInvalidArgument):
		return kerr.InvalidConfig.Code, kmsg.StringPtr(err.Error())
	}
	return r.groupCode(err), kmsg.StringPtr(err.Error())
}
