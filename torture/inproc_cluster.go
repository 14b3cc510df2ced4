package torture

import (
	"fmt"
	"strings"

	"github.com/logd/logd/internal/node"
)

// clusterConfig sets node n's cluster mode in cfg when the cluster has
// more than one node, as ClusterArgs does for processes: ids from 1, node 0
// bootstraps and the others join it (both ignored on a restart), Raft
// through the mesh.
func (c *InProcessCluster) clusterConfig(n *inprocNode, cfg *node.Config) error {
	if len(c.nodes) < 2 {
		return nil
	}
	routes := map[string]string{}
	for _, kv := range strings.Split(c.mesh.Routes(n.id), ",") {
		from, to, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("torture: bad route %q", kv)
		}
		routes[from] = to
	}
	cfg.Cluster = &node.ClusterConfig{
		NodeID:    fmt.Sprint(n.id + 1),
		RaftAddr:  n.raftAddr,
		Bootstrap: n.id == 0,
		Routes:    routes,
	}
	if n.id != 0 {
		cfg.Cluster.Join = c.nodes[0].addr
	}
	return nil
}
