package kafka

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// Kafka's config sources (DescribeConfigs v1+).
const (
	sourceDynamicTopic = kmsg.ConfigSourceDynamicTopicConfig
	sourceDefault      = kmsg.ConfigSourceDefaultConfig
)

// brokerConfigs are what a broker resource describes: the defaults a new
// topic gets, under Kafka's broker-level names, read-only (logd's node
// settings are flags, set at start).
var brokerConfigs = []struct {
	name  string
	value func(broker.TopicConfig) int64
}{
	{"log.retention.ms", func(c broker.TopicConfig) int64 { return c.RetentionMs }},
	{"log.retention.bytes", func(c broker.TopicConfig) int64 { return c.RetentionBytes }},
	{"log.retention.records", func(c broker.TopicConfig) int64 { return c.RetentionRecords }},
	{"log.segment.bytes", func(c broker.TopicConfig) int64 { return c.SegmentBytes }},
	{"log.roll.ms", func(c broker.TopicConfig) int64 { return c.SegmentMs }},
}

// handleDescribeConfigs describes topics (the configs logd has, each
// DYNAMIC_TOPIC_CONFIG when set on the topic and DEFAULT_CONFIG when not),
// this broker (the topic defaults, read-only) and share groups
// (describeGroupConfigs). Other resource types get
// INVALID_REQUEST with a message. A topic the principal may not describe
// is TOPIC_AUTHORIZATION_FAILED, whether or not it exists.
func handleDescribeConfigs(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	return func() kmsg.Response {
		var topics []broker.TopicConfig
		for _, rr := range req.Resources {
			res := kmsg.NewDescribeConfigsResponseResource()
			res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
			fail := func(code int16, err error) {
				res.ErrorCode, res.ErrorMessage = code, kmsg.StringPtr(err.Error())
			}
			switch rr.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				if topics == nil {
					ctx, cancel := contextWithTimeout(r, 0)
					var err error
					topics, err = s.core.TopicConfigs(ctx, r.c.principal)
					cancel()
					if err != nil {
						fail(r.topicCode(err), err)
						break
					}
				}
				cfg, ok := findTopic(topics, rr.ResourceName)
				if !ok {
					fail(s.missingTopicConfig(r.c.principal, rr.ResourceName))
					break
				}
				res.Configs = describeTopic(s.withNodeLimits(cfg), rr.ConfigNames, req, s.withNodeLimits(broker.DefaultConfig(cfg.Name)))
			case kmsg.ConfigResourceTypeBroker:
				if err := s.checkBrokerResource(rr.ResourceName); err != nil {
					fail(kerr.InvalidRequest.Code, err)
					break
				}
				res.Configs = describeBroker(rr.ConfigNames, req)
			case kmsg.ConfigResourceTypeGroupConfig:
				s.describeGroupConfigs(r, req, rr, &res)
			default:
				fail(kerr.InvalidRequest.Code, fmt.Errorf("logd describes topic, broker and group configs only, not resource type %s", rr.ResourceType))
			}
			resp.Resources = append(resp.Resources, res)
		}
		return resp
	}
}

// missingTopicConfig is the answer for a topic TopicConfigs did not list:
// TOPIC_AUTHORIZATION_FAILED when the principal may not describe it,
// whether or not it exists (as Kafka answers, authorizing before looking
// the topic up, so the answer tells nothing of topics one may not see);
// else UNKNOWN_TOPIC_OR_PARTITION.
func (s *Server) missingTopicConfig(p Principal, name string) (int16, error) {
	if !s.core.Allowed(p, auth.OpDescribe, auth.Topic(name)) {
		return kerr.TopicAuthorizationFailed.Code, fmt.Errorf("%s may not describe topic %q (ask an administrator for an ACL: logd acl add)", principalName(p), name)
	}
	return kerr.UnknownTopicOrPartition.Code, fmt.Errorf("topic %q does not exist", name)
}

// principalName names p in a message ("" is the anonymous principal).
func principalName(p Principal) string {
	if p == "" {
		return auth.Anonymous.String()
	}
	return string(p)
}

func findTopic(topics []broker.TopicConfig, name string) (broker.TopicConfig, bool) {
	for _, c := range topics {
		if c.Name == name {
			return c, true
		}
	}
	return broker.TopicConfig{}, false
}

// checkBrokerResource accepts "" (the cluster's defaults) and this node's
// broker id.
func (s *Server) checkBrokerResource(name string) error {
	if name == "" {
		return nil
	}
	id := s.core.LocalNode().KafkaID
	if name != strconv.Itoa(int(id)) {
		return fmt.Errorf("broker %q is not this broker (%d): send a broker's configs request to that broker", name, id)
	}
	return nil
}

// wanted reports whether a config name is asked for (nil names: all).
func wanted(names []string, name string) bool {
	return names == nil || contains(names, name)
}

func configEntry(req *kmsg.DescribeConfigsRequest, name, value string, typ kmsg.ConfigType, source kmsg.ConfigSource, readOnly bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	c.ReadOnly, c.Source, c.ConfigType = readOnly, source, typ
	c.IsDefault = source == sourceDefault
	if req.IncludeSynonyms && source != sourceDefault {
		syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		syn.Name, syn.Value, syn.Source = name, c.Value, source
		c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
	}
	return c
}

// withNodeLimits is cfg as described: a max.message.bytes not set is the
// node's own bound on a batch.
func (s *Server) withNodeLimits(cfg broker.TopicConfig) broker.TopicConfig {
	if cfg.Produce.MaxMessageBytes == 0 {
		cfg.Produce.MaxMessageBytes = int64(s.core.MaxBatchBytes())
	}
	return cfg
}

func describeTopic(cfg broker.TopicConfig, names []string, req *kmsg.DescribeConfigsRequest, def broker.TopicConfig) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, tc := range broker.TopicSettings {
		if !wanted(names, tc.Name) {
			continue
		}
		v, source := tc.Value(cfg), sourceDynamicTopic
		if v == tc.Value(def) {
			source = sourceDefault
		}
		out = append(out, configEntry(req, tc.Name, v, configType(tc.Kind), source, false))
	}
	return out
}

func describeBroker(names []string, req *kmsg.DescribeConfigsRequest) []kmsg.DescribeConfigsResponseResourceConfig {
	def := broker.DefaultConfig("")
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, bc := range brokerConfigs {
		if wanted(names, bc.name) {
			out = append(out, configEntry(req, bc.name, strconv.FormatInt(bc.value(def), 10), kmsg.ConfigTypeLong, sourceDefault, true))
		}
	}
	return out
}
