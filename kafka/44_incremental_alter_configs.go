package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// handleIncrementalAlterConfigs changes the topic configs a request names
// and leaves the others: SET sets a value, DELETE returns the config to
// its default. A GROUP resource is a share group's configs
// (share_configs.go). APPEND and SUBTRACT (list configs) are INVALID_CONFIG: logd
// has no list configs.
func handleIncrementalAlterConfigs(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	return func() kmsg.Response {
		for _, rr := range req.Resources {
			res := kmsg.NewIncrementalAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
			if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
				res.ErrorCode, res.ErrorMessage = s.alterGroupConfigs(r, rr.ResourceName, rr.Configs, req.ValidateOnly)
				resp.Resources = append(resp.Resources, res)
				continue
			}
			res.ErrorCode, res.ErrorMessage = s.alterResource(r, rr.ResourceType, rr.ResourceName,
				func() (broker.ConfigChange, error) { return incrementalChange(rr.Configs) }, req.ValidateOnly)
			resp.Resources = append(resp.Resources, res)
		}
		return resp
	}
}

func incrementalChange(cs []kmsg.IncrementalAlterConfigsRequestResourceConfig) (broker.ConfigChange, error) {
	var ch broker.ConfigChange
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.Name] {
			return ch, fmt.Errorf("%w: config %s is given twice", errConfig, c.Name)
		}
		seen[c.Name] = true
		var err error
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return ch, fmt.Errorf("%w: SET %s needs a value", errConfig, c.Name)
			}
			err = setConfig(&ch, c.Name, c.Value)
		case kmsg.IncrementalAlterConfigOpDelete:
			err = setConfig(&ch, c.Name, nil)
		default:
			err = fmt.Errorf("%w: %s %s: logd's configs are not lists (use SET or DELETE)", errConfig, c.Op, c.Name)
		}
		if err != nil {
			return ch, err
		}
	}
	return ch, nil
}
