package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
)

// selfID names a node that runs alone.
const selfID = "1"

// statusTimeout bounds how long Status waits for another node; a node that
// does not answer in time is reported not alive.
const statusTimeout = time.Second

// Status reports the nodes and every partition's leader, replicas and Raft
// state. A node that runs alone leads every partition. In a cluster the
// answering node asks every other node for its replicas' state (in
// parallel, each bounded by statusTimeout) and reports, for each partition,
// the view of the replica that leads it.
func (s *Server) Status(ctx context.Context, req *pb.ClusterStatusRequest) (*pb.ClusterStatusResponse, error) {
	if s.cl == nil {
		resp := &pb.ClusterStatusResponse{Self: selfID}
		resp.Nodes = append(resp.Nodes, &pb.NodeStatus{Id: selfID, ApiAddr: s.Addr(), Alive: true})
		for _, c := range s.topics.List() {
			_, parts, err := s.topics.Partitions(c.Name)
			if err != nil {
				continue
			}
			for _, p := range parts {
				resp.Partitions = append(resp.Partitions, &pb.PartitionStatus{
					Topic: p.Topic, Partition: p.ID, Leader: selfID, Replicas: []string{selfID}, RaftState: "Leader (single node)",
				})
			}
		}
		return resp, nil
	}
	c := s.cl
	local := c.localStatus()
	if req.Local {
		return local, nil
	}
	st := c.meta.FSM.State()
	resp := &pb.ClusterStatusResponse{Self: c.self}
	views := map[string][]*pb.PartitionStatus{c.self: local.Partitions}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range st.Nodes {
		ns := &pb.NodeStatus{Id: n.ID, ApiAddr: n.APIAddr, RaftAddr: n.RaftAddr, Alive: n.ID == c.self}
		resp.Nodes = append(resp.Nodes, ns)
		if n.ID == c.self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			other := &pb.ClusterStatusResponse{}
			if err := c.fwd.invoke(cctx, n.APIAddr, pb.Cluster_Status_FullMethodName, &pb.ClusterStatusRequest{Local: true}, other); err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ns.Alive = true
			views[n.ID] = other.Partitions
		}()
	}
	wg.Wait()
	sort.Slice(resp.Nodes, func(i, j int) bool { return resp.Nodes[i].Id < resp.Nodes[j].Id })
	for _, name := range slices.Sorted(maps.Keys(st.Topics)) {
		t := st.Topics[name]
		for i, set := range t.Replicas {
			ps := &pb.PartitionStatus{Topic: name, Partition: int32(i), Replicas: slices.Clone(set), RaftState: "no replica answered"}
			// The best view: a replica that says it leads, in the highest
			// term; else any replica's.
			var best *pb.PartitionStatus
			bestLeads := false
			for _, id := range set {
				for _, v := range views[id] {
					if v.Topic != name || v.Partition != int32(i) {
						continue
					}
					leads := strings.HasPrefix(v.RaftState, raft.Leader.String())
					if best == nil || (leads && (!bestLeads || v.Term > best.Term)) {
						best, bestLeads = v, leads
					}
				}
			}
			if best != nil {
				ps.Leader, ps.CommitIndex, ps.Term = best.Leader, best.CommitIndex, best.Term
				ps.RaftState = best.RaftState
			}
			resp.Partitions = append(resp.Partitions, ps)
		}
	}
	return resp, nil
}

// localStatus is this node's view of its own replicas.
func (c *cluster) localStatus() *pb.ClusterStatusResponse {
	resp := &pb.ClusterStatusResponse{Self: c.self}
	resp.Nodes = append(resp.Nodes, &pb.NodeStatus{Id: c.self, ApiAddr: c.s.Addr(), RaftAddr: c.raftAddr(), Alive: true})
	st := c.meta.FSM.State()
	for _, t := range st.Topics {
		for i := range t.Replicas {
			r := c.node.Partition(meta.GroupOf(t.Config, int32(i)))
			if r == nil {
				continue
			}
			rs := r.Status()
			resp.Partitions = append(resp.Partitions, &pb.PartitionStatus{
				Topic: t.Config.Name, Partition: int32(i), Leader: string(rs.LeaderID),
				Replicas: serverIDs(rs.Servers), CommitIndex: rs.CommitIndex, Term: rs.Term,
				RaftState:    rs.State.String() + " on " + c.self,
				AppliedIndex: rs.AppliedIndex, LastIndex: rs.LastIndex,
			})
		}
	}
	return resp
}

func serverIDs(ss []raft.Server) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s.ID)
	}
	return out
}

// Join adds a node to the cluster.
func (s *Server) Join(ctx context.Context, req *pb.JoinRequest) (*pb.JoinResponse, error) {
	if s.cl == nil {
		return nil, status.Error(codes.FailedPrecondition, "this node runs alone, not in a cluster: restart it with --node-id, --raft-addr and --bootstrap to start one")
	}
	if req.NodeId == "" || req.ApiAddr == "" || req.RaftAddr == "" {
		return nil, invalidArg("join: node_id, api_addr and raft_addr are all needed")
	}
	return metaWrite(s, ctx, pb.Cluster_Join_FullMethodName, req, &pb.JoinResponse{}, func() (*pb.JoinResponse, error) {
		if err := s.cl.join(ctx, meta.Node{ID: req.NodeId, APIAddr: req.ApiAddr, RaftAddr: req.RaftAddr}); err != nil {
			return nil, s.clusterStatus(err)
		}
		return &pb.JoinResponse{}, nil
	})
}

// RemoveNode removes a node from the cluster: each of its replicas moves to
// the least loaded other node (ReplaceNode), the partitions' leaders change
// their groups to match, and the node leaves the metadata group.
func (s *Server) RemoveNode(ctx context.Context, req *pb.RemoveNodeRequest) (*pb.RemoveNodeResponse, error) {
	if s.cl == nil {
		return nil, status.Error(codes.FailedPrecondition, "this node runs alone, not in a cluster")
	}
	return metaWrite(s, ctx, pb.Cluster_RemoveNode_FullMethodName, req, &pb.RemoveNodeResponse{}, func() (*pb.RemoveNodeResponse, error) {
		return s.cl.removeNode(ctx, req.NodeId)
	})
}

func (c *cluster) removeNode(ctx context.Context, id string) (*pb.RemoveNodeResponse, error) {
	st := c.meta.FSM.State()
	if _, ok := st.Nodes[id]; !ok {
		return nil, status.Errorf(codes.NotFound, "node %q is not a member (see `logd cluster status`)", id)
	}
	if len(st.Nodes) == 1 {
		return nil, status.Errorf(codes.FailedPrecondition, "node %q is the cluster's last node", id)
	}
	resp := &pb.RemoveNodeResponse{}
	others := loads(st, id)
	for _, name := range slices.Sorted(maps.Keys(st.Topics)) {
		t := st.Topics[name]
		sets, err := replication.ReplaceNode(t.Replicas, id, others)
		if err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "topic %q: %v: add a node first", name, err)
		}
		changed := false
		for i := range sets {
			if !slices.Equal(sets[i], t.Replicas[i]) {
				changed = true
				resp.Moved = append(resp.Moved, fmt.Sprintf("%s/%d", name, i))
			}
		}
		if !changed {
			continue
		}
		if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpSetReplicas, Name: name, Topic: &meta.Topic{Replicas: sets}}); err != nil {
			return nil, c.s.clusterStatus(err)
		}
		// The loads move with the placement, for the next topic.
		t.Replicas = sets
		st.Topics[name] = t
		others = loads(st, id)
	}
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpRemoveNode, Name: id}); err != nil {
		return nil, c.s.clusterStatus(err)
	}
	if err := c.meta.RemoveServer(raft.ServerID(id)); err != nil {
		return nil, c.s.clusterStatus(err)
	}
	return resp, nil
}

// ClusterMembers lists the ids of the nodes the cluster metadata holds, as
// this node sees them (nil on a node that runs alone).
func (s *Server) ClusterMembers() []string {
	if s.cl == nil {
		return nil
	}
	var ids []string
	for id := range s.cl.meta.FSM.State().Nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// LocalHighWatermark is this node's high watermark of a partition (its
// replica's view: what it knows is committed), -1 without the partition.
func (s *Server) LocalHighWatermark(topic string, id int32) int64 {
	p, err := s.topics.Partition(topic, id)
	if err != nil {
		return -1
	}
	return p.Log.HighWatermark()
}
