package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetForLeaderEpoch answers the end offset of a leader epoch, which
// clients use to detect a log truncated under them, as Kafka does. logd's
// leader epoch is the partition's Raft term, which every stored batch
// holds: the core's EpochEnd, current on the leader (the base offset of
// the first batch of a larger epoch, or the high watermark, and the
// largest epoch at or below the one asked that a batch holds; for the
// current epoch, that epoch); an epoch newer than any the leader's log
// holds is UNDEFINED (-1, -1).
//
// The leader and epoch the checks start from are this node's view, which
// can be behind: a replica asleep since its node restarted names itself
// leader at its last term until it is woken. An epoch newer than that
// view is therefore asked of the core too, which wakes the replica and
// proves its leadership first (NOT_LEADER_OR_FOLLOWER when another node
// leads), and is UNDEFINED only when the proven leader's log holds no such
// epoch: answered from the stale view alone, a consumer that had read
// records of a newer epoch took UNDEFINED for a lost log and went back to
// its reset offset.
func handleOffsetForLeaderEpoch(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	return func() kmsg.Response {
		for _, rt := range req.Topics {
			t := kmsg.NewOffsetForLeaderEpochResponseTopic()
			t.Topic = rt.Topic
			info, err := s.core.Topic(r.ctx, r.c.principal, rt.Topic)
			for _, rp := range rt.Partitions {
				p := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				p.Partition, p.LeaderEpoch, p.EndOffset = rp.Partition, -1, -1
				switch {
				case err != nil:
					p.ErrorCode = r.topicCode(err)
				case partitionInfo(info, rp.Partition) == nil:
					p.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					pi := partitionInfo(info, rp.Partition)
					local := s.core.LocalNode().ID
					switch {
					case pi.Leader != local:
						p.ErrorCode = kerr.NotLeaderForPartition.Code
					case rp.CurrentLeaderEpoch >= 0 && rp.CurrentLeaderEpoch > pi.LeaderEpoch:
						p.ErrorCode = kerr.UnknownLeaderEpoch.Code
					case rp.CurrentLeaderEpoch >= 0 && rp.CurrentLeaderEpoch < pi.LeaderEpoch:
						p.ErrorCode = kerr.FencedLeaderEpoch.Code
					case rp.LeaderEpoch < 0:
						// No epoch asked: UNDEFINED, as in Kafka.
					default:
						found, end, err := s.core.EpochEnd(r.ctx, r.c.principal, rt.Topic, rp.Partition, rp.LeaderEpoch)
						switch {
						case err != nil:
							p.ErrorCode = r.topicCode(err)
						case rp.LeaderEpoch == pi.LeaderEpoch:
							p.LeaderEpoch, p.EndOffset = rp.LeaderEpoch, end
						case rp.LeaderEpoch < pi.LeaderEpoch, found == rp.LeaderEpoch:
							p.LeaderEpoch, p.EndOffset = found, end
						}
					}
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}

func partitionInfo(info TopicInfo, id int32) *PartitionInfo {
	for i := range info.Partitions {
		if info.Partitions[i].ID == id {
			return &info.Partitions[i]
		}
	}
	return nil
}
