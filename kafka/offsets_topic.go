package kafka

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
)

// offsetsTopic is the topic Kafka keeps committed offsets and groups in.
// logd keeps them in its cluster metadata instead, so no such topic is
// stored; while none of that name exists, the listener presents a
// virtual one (broker.OffsetsTopic), for the clients and tools that look
// for it and for KIP-848 members whose regular expression names it (a
// Kafka coordinator resolves a regex over every topic, internal ones
// included, and the member adopts what it is assigned):
//
//   - Metadata lists it as internal (IsInternal: franz-go's and the Java
//     client's regex consumers skip it, kadm's ListTopics leaves it
//     out), with its fixed id and one partition led by the group
//     coordinator, the node that holds the committed offsets (a Kafka
//     group's coordinator leads its __consumer_offsets partition too),
//     with no leader epoch (-1: nothing is written to it, so clients
//     have no position to validate with OffsetForLeaderEpoch);
//   - ListOffsets answers 0 for every position, Fetch answers it empty
//     (high watermark 0) from every node, OffsetCommit and OffsetFetch
//     take it as any topic (package broker);
//   - Produce is refused with INVALID_TOPIC_EXCEPTION, as Kafka refuses a
//     client's write to an internal topic.
//
// Each request is authorized by the core as for any topic: the core
// refuses a principal before it looks the topic up, so only a request
// it lets through learns that no such topic is stored (offsetsTopicIn).
// A topic a user creates under that name is answered as any other topic.
const offsetsTopic = broker.OffsetsTopic

// errInternalTopicWrite is a produce to the virtual offsets topic.
var errInternalTopicWrite = errors.New("kafka: cannot append to internal topic " + offsetsTopic + ": committed offsets are written with OffsetCommit")

// idCore is the part of the core that names topics by Kafka topic id.
type idCore interface {
	TopicIDOf(name string) ([16]byte, bool)
}

// offsetsTopicIn reports whether err, the core's answer to a request
// about topic, says the request is about the virtual offsets topic: the
// topic is offsetsTopic, the core let the request through and found no
// such topic (this node's copy of the cluster metadata does not hold it:
// *NotLeaderError), and no topic of that name is on this node (the core
// gives the name the virtual topic's id).
func (s *Server) offsetsTopicIn(topic string, err error) bool {
	if topic != offsetsTopic || err == nil {
		return false
	}
	var nl *NotLeaderError
	if !errors.Is(err, ErrUnknownTopic) && !errors.As(err, &nl) {
		return false
	}
	ic, ok := s.core.(idCore)
	if !ok {
		return true
	}
	id, ok := ic.TopicIDOf(offsetsTopic)
	return ok && id == broker.OffsetsTopicID()
}

// offsetsTopicMetadata is the virtual offsets topic in Metadata: one
// partition, led by the group coordinator (controllerID: the metadata
// leader, -1 while there is none, then LEADER_NOT_AVAILABLE as for any
// partition without a leader).
func (s *Server) offsetsTopicMetadata(cv clusterView) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = kmsg.StringPtr(offsetsTopic)
	t.TopicID = broker.OffsetsTopicID()
	t.IsInternal = true
	p := kmsg.NewMetadataResponseTopicPartition()
	p.Partition, p.LeaderEpoch = 0, -1
	p.Leader = s.controllerID(cv)
	p.Replicas, p.ISR = []int32{}, []int32{}
	if p.Leader < 0 {
		p.ErrorCode = kerr.LeaderNotAvailable.Code
	} else {
		p.Replicas, p.ISR = []int32{p.Leader}, []int32{p.Leader}
	}
	t.Partitions = []kmsg.MetadataResponseTopicPartition{p}
	return t
}

// offsetsTopicOffset is a position in the virtual offsets topic's one
// partition, empty: 0 for earliest, latest and any time.
func offsetsTopicOffset(part int32, spec int64) (int64, error) {
	switch {
	case part != 0:
		return 0, kind.Errorf(ErrUnknownPartition, "topic %q has partition 0 only, not %d", offsetsTopic, part)
	case spec == Earliest || spec == Latest || spec >= 0:
		return 0, nil
	}
	return 0, kind.Errorf(kind.ErrInvalidArgument, "list offsets: unknown spec %d (earliest -2, latest -1, or a time in ms)", spec)
}

// offsetsTopicFetch answers, in res, the fetched partitions of the
// virtual offsets topic: partition 0 is empty (offset 0 is its end,
// any other offset out of range), others do not exist. It reports
// whether the fetch read nothing but them.
func (s *Server) offsetsTopicFetch(res FetchResult) (only bool) {
	served, other := 0, 0
	for i := range res.Partitions {
		fp := &res.Partitions[i]
		if !s.offsetsTopicIn(fp.Topic, fp.Err) {
			if fp.Err == nil {
				other++
			}
			continue
		}
		if _, err := offsetsTopicOffset(fp.Partition, Earliest); err != nil {
			fp.Err = err
			continue
		}
		if fp.NextOffset != 0 {
			fp.Err = kind.Errorf(broker.ErrOffsetOutOfRange, "fetch: offset %d of %s/0 is out of range: the partition is empty, 0 is its start and end", fp.NextOffset, offsetsTopic)
			continue
		}
		fp.Err, fp.HighWatermark, fp.LastStable, fp.LogStart, fp.Batches = nil, 0, 0, 0, nil
		served++
	}
	return served > 0 && other == 0
}

// offsetsTopicWait holds a fetch that read only the virtual offsets topic
// for the rest of its max wait, as a long poll of an empty partition
// waits for a record that here never comes (the core returns at once
// when it has no partition to wait on), unless the connection closes.
func offsetsTopicWait(r *request, start time.Time, maxWait time.Duration) {
	left := maxWait - time.Since(start)
	if left <= 0 {
		return
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.ctx.Done():
	}
}
