package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// clusterID is what Metadata and DescribeCluster report.
const clusterID = "logd"

// handleMetadata lists the live nodes as brokers and the topics asked for
// (all of them when Topics is null, and in v0 when it is empty) with each
// partition's leader. Topics are never created by Metadata.
func handleMetadata(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	return func() kmsg.Response {
		s.metadata(r, req, resp)
		return resp
	}
}

// metadata answers req into resp (Metadata, DescribeTopicPartitions).
func (s *Server) metadata(r *request, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	ctx := r.ctx
	cv, err := s.clusterView(ctx)
	if err != nil {
		s.log.Warn("kafka metadata: listing nodes failed", "err", err)
	}
	resp.Brokers = cv.brokers
	resp.ClusterID = kmsg.StringPtr(clusterID)
	resp.ControllerID = s.controllerID(cv)
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		infos, err := s.core.TopicLayouts(ctx, r.c.principal)
		if err != nil {
			s.log.Warn("kafka metadata: listing topics failed", "err", err)
		}
		created := false
		for _, info := range infos {
			created = created || info.Config.Name == offsetsTopic
			resp.Topics = append(resp.Topics, metadataTopic(r, cv, info.Config.Name, info, nil))
		}
		if !created && s.core.Allowed(r.c.principal, auth.OpDescribe, auth.Topic(offsetsTopic)) {
			resp.Topics = append(resp.Topics, s.offsetsTopicMetadata(cv))
		}
		return
	}
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			t := kmsg.NewMetadataResponseTopic()
			t.TopicID = rt.TopicID
			t.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, t)
			continue
		}
		info, err := s.core.TopicLayout(ctx, r.c.principal, *rt.Topic)
		if s.offsetsTopicIn(*rt.Topic, err) {
			resp.Topics = append(resp.Topics, s.offsetsTopicMetadata(cv))
			continue
		}
		resp.Topics = append(resp.Topics, metadataTopic(r, cv, *rt.Topic, info, err))
	}
}

func metadataTopic(r *request, cv clusterView, name string, info TopicInfo, err error) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = kmsg.StringPtr(name)
	if err != nil {
		t.ErrorCode = metadataTopicCode(r, err)
		return t
	}
	t.TopicID = broker.TopicID(info.Config)
	for _, p := range info.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.ID
		mp.LeaderEpoch = p.LeaderEpoch
		leader, ok := cv.ids[p.Leader]
		if p.Leader == "" || !ok {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			leader = -1
		}
		mp.Leader = leader
		mp.Replicas = cv.kafkaIDs(p.Replicas)
		mp.ISR = cv.kafkaIDs(p.ISR)
		t.Partitions = append(t.Partitions, mp)
	}
	return t
}

// metadataTopicCode is the code of a topic Metadata cannot describe. The
// core answers *NotLeaderError for a topic this node's copy of the cluster
// metadata does not hold (it names the metadata leader, for front-ends
// that pass the lookup on): a Kafka broker answers from its own metadata,
// so the topic is unknown here, UNKNOWN_TOPIC_OR_PARTITION as from every
// broker, which clients retry while a new topic's creation reaches this
// node. NOT_LEADER_OR_FOLLOWER would be about a partition the answer does
// not name.
func metadataTopicCode(r *request, err error) int16 {
	var nl *NotLeaderError
	if errors.As(err, &nl) {
		return kerr.UnknownTopicOrPartition.Code
	}
	return r.topicCode(err)
}

// clusterView is the live nodes as Kafka brokers.
type clusterView struct {
	brokers []kmsg.MetadataResponseBroker
	ids     map[string]int32 // node id -> Kafka broker id, nodes with a Kafka listener only
	local   Node
}

func (cv clusterView) kafkaIDs(nodes []string) []int32 {
	out := make([]int32, 0, len(nodes))
	for _, n := range nodes {
		if id, ok := cv.ids[n]; ok {
			out = append(out, id)
		}
	}
	return out
}

// clusterView lists the live nodes that serve Kafka (a client forgets a
// broker Metadata stops listing, and looks for its group coordinator
// again: Sarama does only then). This node is always
// in it, at the advertised address; on an error the view holds only this
// node.
func (s *Server) clusterView(ctx context.Context) (clusterView, error) {
	local := s.core.LocalNode()
	cv := clusterView{ids: map[string]int32{local.ID: local.KafkaID}, local: local}
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = local.KafkaID, s.host, s.port
	cv.brokers = append(cv.brokers, b)
	nodes, err := s.core.Nodes(ctx)
	for _, n := range nodes {
		if n.ID == local.ID || n.KafkaAddr == "" {
			continue
		}
		host, port, perr := splitHostPort(n.KafkaAddr)
		if perr != nil {
			s.log.Warn("kafka metadata: node has a bad Kafka address", "node", n.ID, "addr", n.KafkaAddr)
			continue
		}
		cv.ids[n.ID] = n.KafkaID // a replica's id, even while its node is down
		if !s.core.NodeLive(ctx, n.ID) {
			continue // Kafka lists its live brokers only
		}
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = n.KafkaID, host, port
		cv.brokers = append(cv.brokers, b)
	}
	return cv, err
}

// controllerID is the broker clients send admin requests to: the node
// that runs the group coordinator (the metadata leader), or -1.
func (s *Server) controllerID(cv clusterView) int32 {
	err := s.core.CoordinatesGroups()
	if err == nil {
		return cv.local.KafkaID
	}
	var nc *NotCoordinatorError
	if errors.As(err, &nc) {
		if id, ok := cv.ids[nc.Leader.ID]; ok {
			return id
		}
	}
	return -1
}
