package groups

import "time"

// State is a group's state in Kafka's classic group protocol.
type State int

// The states, named as Kafka's DescribeGroups and ListGroups report them.
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	default:
		return "Dead"
	}
}

// ConsumerProtocolType is Kafka's protocol type for consumer groups; the
// server-side assignors read and write its encoding.
const ConsumerProtocolType = "consumer"

// Protocol is one assignment protocol a member supports, in its order of
// preference, with the member's opaque metadata for it (for protocol type
// "consumer", an encoded Subscription).
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is a JoinGroup call.
type JoinRequest struct {
	Group string
	// MemberID is empty on a member's first join; the coordinator assigns
	// one and returns it.
	MemberID string
	// ClientID and ClientHost are shown by Describe; ClientID also prefixes
	// a new member's id, as in Kafka.
	ClientID   string
	ClientHost string
	// SessionTimeout: the member is removed when no heartbeat (or other
	// call) arrives within it. Zero means Config.DefaultSessionTimeout.
	SessionTimeout time.Duration
	// RebalanceTimeout: how long a rebalance waits for this member to
	// re-join and to sync. Zero means the session timeout.
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	// ServerAssign asks the coordinator to compute the assignment when this
	// member is the leader (logd's own clients). The protocol type must be
	// "consumer" and every protocol name an Assignor's.
	ServerAssign bool
}

// JoinResult is the answer to a completed join.
type JoinResult struct {
	MemberID     string
	Generation   int32
	ProtocolType string
	Protocol     string
	Leader       string
	// Members is set only for a leader that assigns client-side: every
	// member's metadata for the chosen protocol, in join order.
	Members []JoinedMember
}

// JoinedMember is one member as the leader sees it.
type JoinedMember struct {
	MemberID string
	Metadata []byte
}

// SyncRequest is a SyncGroup call.
type SyncRequest struct {
	Group      string
	MemberID   string
	Generation int32
	// ProtocolType and Protocol, when set, must match the group's (Kafka's
	// SyncGroup v5 check).
	ProtocolType string
	Protocol     string
	// Assignments is the leader's opaque assignment per member id; ignored
	// from a follower, and when the coordinator assigns server-side.
	Assignments map[string][]byte
}

// SyncResult is a member's share of the generation's assignment.
type SyncResult struct {
	ProtocolType string
	Protocol     string
	// Assignment is opaque; for protocol type "consumer" it decodes with
	// DecodeAssignment.
	Assignment []byte
}

// GroupListing is one line of List.
type GroupListing struct {
	Group        string
	ProtocolType string
	State        State
}

// GroupDescription is what Describe reports about a group.
type GroupDescription struct {
	Group        string
	State        State
	ProtocolType string
	Protocol     string
	Generation   int32
	Leader       string
	Rebalances   uint64 // rebalances started since the group was created here
	Members      []MemberDescription
}

// MemberDescription is one member in a GroupDescription.
type MemberDescription struct {
	MemberID         string
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	// Metadata is the member's metadata for the group's protocol (nil
	// before the first join phase completes).
	Metadata []byte
	// Assignment is the member's current opaque assignment; Partitions is
	// its decoding when the protocol type is "consumer".
	Assignment []byte
	Partitions []TopicPartition
}

// TopicPartition names one partition of one topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Config configures a Coordinator. The zero value is usable.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound members' session
	// timeouts (Kafka's group.min.session.timeout.ms and
	// group.max.session.timeout.ms). Defaults: 6 s and 30 min.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// DefaultSessionTimeout is used when a join names none. Default 10 s.
	DefaultSessionTimeout time.Duration
	// InitialRebalanceDelay holds the first join phase of an Empty group
	// open this long after each new member (up to the rebalance timeout), so
	// members starting together, or re-joining after a coordinator
	// failover, land in one generation instead of one each. Kafka's
	// group.initial.rebalance.delay.ms, 3 s there; 0 (the default here)
	// completes the phase as soon as every member has joined.
	InitialRebalanceDelay time.Duration
	// Partitions returns a topic's partition count (0 if it does not
	// exist). Only the server-side assignors use it. It is called with the
	// coordinator's lock held and must not call back into the Coordinator.
	Partitions func(topic string) int32
	// Assignors are the server-side assignors by protocol name. Default:
	// DefaultAssignors().
	Assignors []Assignor
	// Clock defaults to SystemClock.
	Clock Clock
	// Generations records every generation before a member learns it
	// (GenerationStore); the core passes the node's durable, in a cluster
	// replicated, store. Default: a MemoryGenerations of this Coordinator.
	Generations GenerationStore
	// States records each generation's membership and assignment before
	// any member learns it (StateStore), so that the next coordinator
	// takes the groups over (Restore); the core passes the cluster's
	// metadata. Default: none, membership is held in memory only.
	States StateStore
}

func (c Config) withDefaults() Config {
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = 6 * time.Second
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = 30 * time.Minute
	}
	if c.DefaultSessionTimeout <= 0 {
		c.DefaultSessionTimeout = 10 * time.Second
	}
	if c.Partitions == nil {
		c.Partitions = func(string) int32 { return 0 }
	}
	if c.Assignors == nil {
		c.Assignors = DefaultAssignors()
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Generations == nil {
		c.Generations = &MemoryGenerations{}
	}
	return c
}
