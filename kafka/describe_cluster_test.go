package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster on one node lists it as broker and controller; another
// endpoint type than brokers is UNSUPPORTED_ENDPOINT_TYPE.
func TestDescribeClusterOneNode(t *testing.T) {
	core := newFakeCore()
	defer core.coord.Close()
	s := startServer(t, core, Config{})
	cl := newClient(t, s.Addr().String())
	req := kmsg.NewPtrDescribeClusterRequest()
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.ControllerID != 1 || resp.Brokers[0].NodeID != 1 {
		t.Fatalf("DescribeCluster: %v %+v", err, resp)
	}
	req.EndpointType = 2
	resp, err = req.RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != kerr.UnsupportedEndpointType.Code || len(resp.Brokers) != 0 {
		t.Fatalf("DescribeCluster of controllers: %v %+v", err, resp)
	}
}
