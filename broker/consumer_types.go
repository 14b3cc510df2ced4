package broker

import (
	"fmt"
	"time"

	"github.com/logd/logd/groups"
)

// The types of the consumer groups of KIP-848's protocol (Kafka's
// ConsumerGroupHeartbeat and ConsumerGroupDescribe; docs/groups.md,
// "Server-assigned groups"), as the front-ends see them.

// ConsumerCode is an outcome of a consumer-group heartbeat that is a state
// of the protocol the member acts on (join again, give up its instance
// id), not an error of the core; each front-end names it in its own terms.
type ConsumerCode int8

// The consumer codes.
const (
	ConsumerOK                  ConsumerCode = iota
	ConsumerUnknownMember                    // join again with a new member id
	ConsumerFencedMemberEpoch                // join again (epoch 0) with the same id
	ConsumerUnreleasedInstance               // another member holds the instance id
	ConsumerInvalidRequest                   // a malformed heartbeat (its message says how)
	ConsumerUnsupportedAssignor              // an assignor the coordinator lacks
	ConsumerNotConsumerGroup                 // the id names a classic group with members
)

// ErrStaleMemberEpoch is an offset commit of a member of a server-assigned
// group with another epoch than the member's (Kafka's
// STALE_MEMBER_EPOCH); it is a kind of groups.ErrIllegalGeneration.
var ErrStaleMemberEpoch = fmt.Errorf("stale member epoch: %w", groups.ErrIllegalGeneration)

// Consumer-group timing: members beat every ConsumerHeartbeatInterval and
// are removed after ConsumerSessionTimeout without one (Kafka's defaults).
const (
	ConsumerHeartbeatInterval = 5 * time.Second
	ConsumerSessionTimeout    = 45 * time.Second
)

// ConsumerTopicPartitions is a member's partitions of one topic. Requests
// name topics by id (Topic may be empty there); answers give both.
type ConsumerTopicPartitions struct {
	Topic      string
	TopicID    [16]byte
	Partitions []int32
}

// ConsumerHeartbeatRequest is a member's heartbeat: MemberEpoch 0 joins,
// -1 leaves, -2 leaves for now keeping a static member's partitions for
// its instance id. A nil field keeps what the member sent before.
type ConsumerHeartbeatRequest struct {
	Principal        Principal
	Group, Member    string
	MemberEpoch      int32
	InstanceID       *string
	RackID           *string
	RebalanceTimeout time.Duration // negative: unchanged
	Topics           []string
	Regex            *string
	Assignor         *string
	Owned            []ConsumerTopicPartitions
	ClientID         string
	ClientHost       string
}

// ConsumerHeartbeatResult answers a heartbeat: the member's epoch, when
// to beat again, and its assignment when the member must learn it (nil:
// unchanged).
type ConsumerHeartbeatResult struct {
	Code        ConsumerCode
	Message     string
	MemberEpoch int32
	Interval    time.Duration
	Assignment  []ConsumerTopicPartitions
}

// ConsumerMemberDescription is one member as ConsumerGroupDescribe shows
// it: its current and its target assignment.
type ConsumerMemberDescription struct {
	Member, InstanceID, Rack, ClientID, ClientHost string
	MemberEpoch                                    int32
	Topics                                         []string
	Regex                                          string
	Assignment, Target                             []ConsumerTopicPartitions
}

// ConsumerGroupDescription is a server-assigned group: its state
// ("Empty", "Reconciling", "Stable"; "Dead" when there is none), group
// epoch, the epoch of its target assignment, assignor and members.
type ConsumerGroupDescription struct {
	Group           string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	Assignor        string
	Members         []ConsumerMemberDescription
}
