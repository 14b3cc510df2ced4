package torture

import (
	"fmt"

	"github.com/logd/logd/internal/server"
)

// clusterConfig sets node n's cluster mode in cfg. This server has no
// cluster mode yet: only one node can run.
func (c *InProcessCluster) clusterConfig(n *inprocNode, cfg *server.Config) error {
	if len(c.nodes) > 1 {
		return fmt.Errorf("torture: %d in-process nodes need the server's cluster mode", len(c.nodes))
	}
	_ = cfg
	return nil
}
