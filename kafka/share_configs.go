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
	DescribeShareGroupConfig(ctx context.Context, p Principal, group string) (broker.ShareGroupConfig, error)
}

var _ shareConfigCore = (*broker.Broker)(nil)

// describeGroupConfigs answers one GROUP resource of DescribeConfigs: a
// share group's configs in force, each GROUP_CONFIG when set on the group
// and DEFAULT_CONFIG when not (a group never configured, or unknown, shows
// the defaults, as Kafka answers). A principal without describe on the
// group gets GROUP_AUTHORIZATION_FAILED.
func (s *Server) describeGroupConfigs(r *request, req *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource, res *kmsg.DescribeConfigsResponseResource) {
	sc, ok := s.core.(shareConfigCore)
	if !ok {
		res.ErrorCode, res.ErrorMessage = resourceError(kmsg.ConfigResourceTypeGroupConfig)
		return
	}
	cfg, err := sc.DescribeShareGroupConfig(r.ctx, r.c.principal, rr.ResourceName)
	switch {
	case errors.Is(err, kind.ErrInvalidArgument):
		res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		return
	case err != nil:
		res.ErrorCode, res.ErrorMessage = r.groupCode(err), kmsg.StringPtr(err.Error())
		return
	}
	for _, e := range cfg.Entries() {
		if !wanted(rr.ConfigNames, e.Name) {
			continue
		}
		source, typ := sourceDefault, kmsg.ConfigTypeString
		if e.Set {
			source = kmsg.ConfigSourceGroupConfig
		}
		switch e.Name {
		case "share.dlq.enable", "share.key.ordering":
			typ = kmsg.ConfigTypeBoolean
		case "share.delivery.attempt.limit":
			typ = kmsg.ConfigTypeInt
		case "share.record.lock.duration.ms", "share.redelivery.backoff.base.ms", "share.redelivery.backoff.max.ms":
			typ = kmsg.ConfigTypeLong
		}
		res.Configs = append(res.Configs, configEntry(req, e.Name, e.Value, typ, source, false))
	}
}

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
