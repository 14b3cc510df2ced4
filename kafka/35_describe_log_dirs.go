package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeLogDirs describes this node's one data directory: the
// partitions it keeps a replica of (those asked, every one when Topics is
// null), each with its bytes on disk and an offset lag of 0 (logd moves
// no replica between directories, so none is a future replica), and the
// file system's size and free space (v4). Describe on the cluster, as in
// Kafka; a principal without it gets CLUSTER_AUTHORIZATION_FAILED for the
// request.
func handleDescribeLogDirs(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	return func() kmsg.Response {
		ctx, cancel := contextWithTimeout(r, 0)
		defer cancel()
		d, err := s.core.LogDir(ctx, r.c.principal)
		if err != nil {
			resp.ErrorCode = r.errorCode(err)
			return resp
		}
		var want map[string]map[int32]bool
		if req.Topics != nil {
			want = map[string]map[int32]bool{}
			for _, t := range req.Topics {
				if want[t.Topic] == nil {
					want[t.Topic] = map[int32]bool{}
				}
				for _, p := range t.Partitions {
					want[t.Topic][p] = true
				}
			}
		}
		dir := kmsg.NewDescribeLogDirsResponseDir()
		dir.Dir, dir.TotalBytes, dir.UsableBytes = d.Path, d.TotalBytes, d.UsableBytes
		for _, p := range d.Partitions {
			if want != nil && !want[p.Topic][p.Partition] {
				continue
			}
			if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != p.Topic {
				t := kmsg.NewDescribeLogDirsResponseDirTopic()
				t.Topic = p.Topic
				dir.Topics = append(dir.Topics, t)
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size = p.Partition, p.Size
			t := &dir.Topics[len(dir.Topics)-1]
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Dirs = append(resp.Dirs, dir)
		return resp
	}
}
