package kafka

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// errConfig is a config entry logd cannot apply (INVALID_CONFIG).
var errConfig = errors.New("invalid config")

// alterTopic applies ch to a topic through the core (validateOnly: checks
// it against the topic's current config only) and returns the error code
// and message for the resource.
func (s *Server) alterTopic(r *request, name string, ch broker.ConfigChange, validateOnly bool) (int16, *string) {
	ctx, cancel := contextWithTimeout(r, 0)
	defer cancel()
	var err error
	if validateOnly {
		var topics []broker.TopicConfig
		if topics, err = s.core.TopicConfigs(ctx, r.c.principal); err == nil {
			cfg, ok := findTopic(topics, name)
			if !ok {
				return kerr.UnknownTopicOrPartition.Code, kmsg.StringPtr(fmt.Sprintf("topic %q does not exist", name))
			}
			err = cfg.Apply(ch).Validate()
		}
	} else {
		_, err = s.core.AlterTopic(ctx, r.c.principal, name, ch)
	}
	if err != nil {
		return r.adminCode(err), kmsg.StringPtr(err.Error())
	}
	return 0, nil
}

// resourceError answers a resource that is not a topic's.
func resourceError(t kmsg.ConfigResourceType) (int16, *string) {
	if t == kmsg.ConfigResourceTypeBroker || t == kmsg.ConfigResourceTypeBrokerLogger {
		return kerr.InvalidRequest.Code, kmsg.StringPtr("logd's broker settings are read-only here: they are logd serve's flags, set at start")
	}
	return kerr.InvalidRequest.Code, kmsg.StringPtr(fmt.Sprintf("logd alters topic configs only, not resource type %s", t))
}

// alterResource answers one resource of AlterConfigs or
// IncrementalAlterConfigs: a topic's configs change by what change
// computes (an error there is INVALID_CONFIG); other resources are
// refused.
func (s *Server) alterResource(r *request, t kmsg.ConfigResourceType, name string, change func() (broker.ConfigChange, error), validateOnly bool) (int16, *string) {
	if t != kmsg.ConfigResourceTypeTopic {
		return resourceError(t)
	}
	ch, err := change()
	if err != nil {
		return kerr.InvalidConfig.Code, kmsg.StringPtr(err.Error())
	}
	return s.alterTopic(r, name, ch, validateOnly)
}

// handleAlterConfigs replaces a topic's configs, as Kafka's AlterConfigs
// does: every config the request does not name goes back to its default.
func handleAlterConfigs(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	return func() kmsg.Response {
		for _, rr := range req.Resources {
			res := kmsg.NewAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
			res.ErrorCode, res.ErrorMessage = s.alterResource(r, rr.ResourceType, rr.ResourceName,
				func() (broker.ConfigChange, error) { return replacingChange(rr.Configs) }, req.ValidateOnly)
			resp.Resources = append(resp.Resources, res)
		}
		return resp
	}
}

// replacingChange is the change that sets the named configs and returns
// every other one to its default.
func replacingChange(cs []kmsg.AlterConfigsRequestResourceConfig) (broker.ConfigChange, error) {
	var ch broker.ConfigChange
	for _, tc := range broker.TopicSettings {
		setConfig(&ch, tc.Name, nil) // the defaults
	}
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.Name] {
			return ch, fmt.Errorf("%w: config %s is given twice", errConfig, c.Name)
		}
		seen[c.Name] = true
		if err := setConfig(&ch, c.Name, c.Value); err != nil {
			return ch, err
		}
	}
	return ch, nil
}
