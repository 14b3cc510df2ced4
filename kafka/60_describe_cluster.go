package kafka

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeCluster lists the same brokers and controller as Metadata.
// Only the brokers endpoint type (1) is served; none is ever fenced. The
// cluster's authorized operations are not computed (INT32_MIN, Kafka's
// "not provided").
func handleDescribeCluster(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	return func() kmsg.Response {
		resp.ClusterID, resp.EndpointType = clusterID, 1
		resp.ClusterAuthorizedOperations = math.MinInt32
		if req.Version >= 1 && req.EndpointType != 1 {
			resp.ErrorCode = kerr.UnsupportedEndpointType.Code
			resp.ErrorMessage = kmsg.StringPtr("logd serves the brokers endpoint type (1) only")
			return resp
		}
		cv, err := s.clusterView(r.ctx)
		if err != nil {
			s.log.Warn("kafka describe cluster: listing nodes failed", "err", err)
		}
		resp.ControllerID = s.controllerID(cv)
		for _, b := range cv.brokers {
			db := kmsg.NewDescribeClusterResponseBroker()
			db.NodeID, db.Host, db.Port = b.NodeID, b.Host, b.Port
			resp.Brokers = append(resp.Brokers, db)
		}
		return resp
	}
}
