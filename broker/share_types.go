package broker

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/logd/logd/partition"
	"github.com/logd/logd/share"
)

// The share groups' types (docs/share-groups.md), as every front-end
// sees them. The share partition's own types are package share's.
type (
	ShareAck     = share.Ack
	ShareAckType = share.AckType
	ShareRange   = share.Range
)

// ShareCode is an outcome of a share-group request that is not an error
// of the core but a state of the protocol a client acts on (rejoin, open
// a new session, drop an acknowledgement); each front-end names it in its
// own terms (Kafka's codes in kafka/).
type ShareCode int8

// The share codes.
const (
	ShareOK                  ShareCode = iota
	ShareUnknownMember                 // join again (epoch 0)
	ShareFencedMemberEpoch             // join again (epoch 0)
	ShareInvalidRecordState            // an acknowledgement named records the member does not hold
	ShareInvalidRequest                // a malformed request (its message says how)
	ShareSessionNotFound               // open a new session (epoch 0)
	ShareInvalidSessionEpoch           // open a new session (epoch 0)
	ShareUnsupported                   // share groups are not served here (this core serves them everywhere; front-ends still map it)
)

// SharePartition names one partition of a topic a share group reads.
type SharePartition struct {
	Topic     string
	Partition int32
}

// ShareHeartbeatRequest is a share group member's heartbeat (KIP-932's
// ShareGroupHeartbeat): MemberEpoch 0 joins, -1 leaves; Topics nil keeps
// the subscription.
type ShareHeartbeatRequest struct {
	Principal   Principal
	Group       string
	Member      string
	MemberEpoch int32
	Topics      []string
	ClientID    string
	ClientHost  string
}

// ShareAssignment is a member's partitions of one topic.
type ShareAssignment struct {
	Topic      string
	TopicID    [16]byte
	Partitions []int32
}

// ShareHeartbeatResult answers a heartbeat: the member's epoch, when to
// beat again, and its assignment when it changed (nil: unchanged).
type ShareHeartbeatResult struct {
	Code        ShareCode
	Message     string
	MemberEpoch int32
	Interval    time.Duration
	Assignment  []ShareAssignment
}

// ShareMemberDescription is one member as ShareGroupDescribe shows it.
type ShareMemberDescription struct {
	Member, ClientID, ClientHost string
	MemberEpoch                  int32
	Topics                       []string
	Assignment                   []ShareAssignment
}

// SharePartitionDescription is one share partition's window, its backlog
// (records from its start, or the log start when later, to the high
// watermark: what the group has still to acknowledge, records
// acknowledged out of order included) and how long ago the oldest record
// not acknowledged was appended (its batch's first timestamp; 0 when
// there is none).
type SharePartitionDescription struct {
	SharePartition
	Start, End                    int64
	Available, Acquired, InFlight int
	Backlog                       int64
	OldestAge                     time.Duration
}

// ShareGroupDescription is a share group: its state ("Empty", "Stable"),
// epoch, members and share partitions.
type ShareGroupDescription struct {
	Group      string
	State      string
	Epoch      int32
	Members    []ShareMemberDescription
	Partitions []SharePartitionDescription
}

// ShareFetchPartition is one partition of a ShareFetch or
// ShareAcknowledge, with the acknowledgements it carries.
type ShareFetchPartition struct {
	SharePartition
	MaxBytes int
	Acks     []ShareAck
	// Reasons are the member's errors for offsets it rejects, carried by
	// their dead letters (DLQHeaderError), each cut to
	// MaxShareReasonBytes.
	Reasons map[int64]string
}

// ShareFetchRequest is a ShareFetch: the session's epoch (0 opens one, -1
// closes it), the partitions it adds to the session (with acks), the ones
// it forgets, and the bounds of the answer.
type ShareFetchRequest struct {
	Principal    Principal
	Group        string
	Member       string
	SessionEpoch int32
	MaxWait      time.Duration
	MaxBytes     int
	MaxRecords   int
	Partitions   []ShareFetchPartition
	Forgotten    []SharePartition
	// Conn names the front-end connection that carries the request (0:
	// none, as over gRPC and HTTP). A session opened on a connection is
	// closed with it (Broker.ShareConnClosed), as Kafka's are.
	Conn uint64
}

// ShareFetchedPartition is one partition's answer: its acknowledgement's
// outcome (AckCode, or AckErr for an error of the core), and its records
// (Err, or the whole batches from the first acquired offset and the
// ranges acquired in them).
type ShareFetchedPartition struct {
	SharePartition
	Acked    bool // the request carried acknowledgements for it
	AckCode  ShareCode
	AckErr   error
	Err      error
	Batches  []byte
	Acquired []ShareRange
}

// ShareFetchResult answers a ShareFetch or ShareAcknowledge.
type ShareFetchResult struct {
	Code       ShareCode
	Message    string
	LockMs     int64
	Partitions []ShareFetchedPartition
	// Release returns the batches' memory to the node's read budget
	// once the answer is sent (nil when it holds none); the batches
	// must not be used after it.
	Release func()
}

// TopicID is a topic's Kafka id: derived from its name and creation time,
// so every node computes the same id and a topic created again under the
// same name has another.
func TopicID(c partition.TopicConfig) [16]byte {
	h := sha256.New()
	h.Write([]byte("logd topic\x00"))
	h.Write([]byte(c.Name))
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(c.CreatedMs))
	h.Write(ms[:])
	var id [16]byte
	copy(id[:], h.Sum(nil))
	return id
}

// TopicByID names the topic of a Kafka topic id (TopicID), if this node
// has it or it is the virtual offsets topic's (groupTopic). The share
// and consumer group APIs name topics by id; each request still
// authorizes the topic by name.
func (b *Broker) TopicByID(id [16]byte) (string, bool) {
	b.share.mu.Lock()
	name, ok := b.share.ids[id]
	b.share.mu.Unlock()
	if ok {
		if c, err := b.groupTopic(name); err == nil && TopicID(c) == id {
			return name, true
		}
	}
	ids := map[[16]byte]string{}
	for _, name := range b.groupTopicNames() {
		if c, err := b.groupTopic(name); err == nil {
			ids[TopicID(c)] = name
		}
	}
	b.share.mu.Lock()
	b.share.ids = ids
	b.share.mu.Unlock()
	name, ok = ids[id]
	return name, ok
}

// TopicIDOf is the Kafka topic id of the topic named, if this node has it
// or it is the virtual offsets topic (groupTopic).
func (b *Broker) TopicIDOf(name string) ([16]byte, bool) {
	c, err := b.groupTopic(name)
	if err != nil {
		return [16]byte{}, false
	}
	return TopicID(c), true
}
