// Package groups is the consumer-group coordinator: it decides which live
// member of a group reads which partition, and fences members that no longer
// own what they think they own. It is transport-neutral: the gRPC, Kafka and
// HTTP front-ends (through the core) call the same Coordinator, so a group is
// one group whichever API its members use.
//
// # What it owns
//
//   - Membership: members join a group, get a member id chosen by the
//     coordinator, and stay members while they heartbeat within their session
//     timeout.
//   - Generations: every completed rebalance starts a new generation; the
//     generation number only grows, also across coordinators: each one is
//     recorded in a GenerationStore before any member learns it (see
//     "Generations across coordinators").
//   - Assignment: either carried opaquely from the group's leader to every
//     member (Kafka's classic protocol: the leader client computes it), or
//     computed here by a server-side Assignor (range, roundrobin,
//     cooperative-sticky) for members that ask for it (logd's own clients).
//   - Liveness: session expiry, rebalance timeouts, members that never sync.
//   - Fencing: ValidateCommit refuses an offset commit from an unknown member
//     or an older generation.
//
// It does not store offsets: committed offsets stay in package offsets (and in
// a cluster, the metadata group). The core calls ValidateCommit and then
// stores the commit itself. Membership is held in memory and, with
// Config.States, recorded at each completed generation (so the next
// coordinator takes it over); each group's last generation is recorded
// through Config.Generations.
//
// # Invariants
//
//   - A generation's assignment gives each partition to at most one member
//     (the server-side assignors give every subscribed partition to exactly
//     one member, or to none while a cooperative revocation is pending; with
//     client-side assignment the leader is trusted, as in Kafka).
//   - The generation increases at each completed join phase, also when the
//     group becomes Empty, and never goes back. A generation members learn
//     was recorded first (GenerationStore.Next), so no two coordinators of
//     a group, one after the other or a deposed one still running, ever
//     tell members the same generation. A member's claimed generation
//     (Subscription.Generation) does not move the group's.
//   - A commit from a member that is not in the group, or that names a
//     generation other than the current one, is refused (ErrUnknownMember,
//     *GenerationError wrapping ErrIllegalGeneration). A commit while the
//     group is CompletingRebalance is refused with ErrRebalanceInProgress,
//     as Kafka does: the new assignment is not known yet.
//   - Member ids are unique for the coordinator's life and never reused, so
//     a paused zombie that was removed stays unknown forever.
//
// # State machine (Kafka's classic group protocol)
//
//	from                 event                                      to
//	Empty                a member joins                             PreparingRebalance
//	PreparingRebalance   every member has joined, or the rebalance  CompletingRebalance
//	                     timeout passed (absent members removed),   (Empty if none is left)
//	                     and the new generation is recorded
//	CompletingRebalance  the leader's SyncGroup, or the server-side Stable
//	                     assignment when the join phase ends
//	CompletingRebalance  a new member, a join with new metadata     PreparingRebalance
//	or Stable            (any join from the leader when Stable),
//	                     a leave, a session expiry, a member that
//	                     did not sync within the rebalance timeout,
//	                     RequestRebalance, CheckPartitions finding a
//	                     subscribed topic's partition count changed
//
// Dead is the state of a group the coordinator does not hold (deleted, or the
// coordinator closed): Describe reports ErrGroupNotFound, the Kafka front-end
// answers DescribeGroups with state "Dead".
//
//   - JoinGroup blocks until the join phase completes (every current member
//     has re-joined, or the largest rebalance timeout of the members passed)
//     and returns the generation, the chosen protocol, the leader and, to a
//     client-side leader only, every member's metadata.
//   - SyncGroup blocks until the assignment is known and returns the
//     member's share. The leader's SyncGroup carries every member's opaque
//     assignment; members without one get an empty assignment.
//   - Heartbeat returns ErrRebalanceInProgress while a rebalance is being
//     prepared: the member must re-join (revoking first, see below).
//   - LeaveGroup removes the member and starts a rebalance at once. Session
//     expiry does the same without the member's help.
//   - A member that joined but does not SyncGroup within the rebalance timeout
//     (a leader that never sends the assignment, say) is removed and the
//     group rebalances.
//
// The protocol type must be the same for every member, and the protocol (the
// assignor) is chosen among those every member supports: each member votes
// for the first of its protocols that all support, most votes wins, ties go
// to the leader's preference (Kafka's rule).
//
// Choices where Kafka has options:
//
//   - Member ids are assigned on the first JoinGroup and returned with its
//     result; MEMBER_ID_REQUIRED is not used. The ghost members it protects
//     Kafka from (a first join whose answer never reached the client) are
//     avoided differently: when a first JoinGroup's context ends before the
//     join phase completes, the member is removed again.
//   - Static membership (group.instance.id) is not implemented: a restarted
//     member re-joins as a new member. JoinRequest has no instance id; the
//     Kafka front-end treats a member that sends one as a dynamic member.
//   - The initial rebalance delay (group.initial.rebalance.delay.ms) is
//     Config.InitialRebalanceDelay, off by default: the core should set it
//     (Kafka: 3 s) so that members starting together or re-joining after a
//     failover share one generation.
//   - Empty groups stay in memory (with their generation) until DeleteGroup.
//
// # Server-side assignment and the cooperative protocol
//
// Subscriptions and assignments use Kafka's consumer protocol encoding
// (protocol type "consumer", kmsg.ConsumerMemberMetadata and
// kmsg.ConsumerMemberAssignment) for every member, so logd's own clients and
// Kafka clients can share a group and read each other's metadata. A member
// that sets JoinRequest.ServerAssign (logd's clients) lets the coordinator
// compute the assignment when that member is the leader; the other members,
// Kafka clients included, are followers and just SyncGroup.
//
// With "cooperative-sticky" (the default for logd's clients) a partition that
// stays with its member is never revoked. A partition that moves from A to B
// is, in the generation that decides the move, given to nobody: A sees it
// missing from its assignment, stops reading it, commits, and re-joins with
// its owned partitions updated; that re-join starts the next generation,
// which gives the partition to B (Kafka's KIP-429 incremental cooperative
// rebalancing). With the eager assignors (range, roundrobin) a member revokes
// all its partitions before it re-joins.
//
// # How a front-end uses it
//
//	res, err := c.JoinGroup(ctx, groups.JoinRequest{Group: g, MemberID: id, ...})
//	// id = res.MemberID from now on
//	asg, err := c.SyncGroup(ctx, groups.SyncRequest{Group: g, MemberID: id,
//	        Generation: res.Generation, Assignments: leaderAssignments})
//	// every session timeout / 3:
//	err = c.Heartbeat(g, id, res.Generation) // ErrRebalanceInProgress: re-join
//	// before storing an offset commit:
//	err = c.ValidateCommit(g, id, generation)
//	// on shutdown:
//	c.LeaveGroup(g, id)
//
// The Kafka front-end maps its requests one to one (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup, DescribeGroups, ListGroups, DeleteGroups; OffsetCommit
// calls ValidateCommit) and each sentinel error to one Kafka error code; the
// gRPC front-end maps them to status codes (ErrIllegalGeneration and
// ErrUnknownMember to FAILED_PRECONDITION). A consumer that names its
// partitions (Kafka's assign()) does not join: it commits with an empty member
// id and generation -1, which ValidateCommit accepts while the group has no
// members.
//
// # Generations across coordinators
//
// Before it completes a join phase the coordinator asks its
// GenerationStore for the next generation (Next records it durably: on a
// single node in its Pebble DB, in a cluster through the metadata group,
// package replication/meta's group_generation command) and only then
// answers the joins. The request starts with the rebalance, in parallel
// with the members' joins, so it rarely adds latency; if the join phase
// ends first the group stays PreparingRebalance until the answer (members
// joining meanwhile are in), and a failed request is tried again a second
// later. A coordinator that takes over knows no group; its first Next for
// a group returns one above everything recorded, whatever happened to the
// previous coordinator:
//
//   - it stopped after recording and before answering: that number is
//     never used, the next one is above it;
//   - it lost the metadata leadership before its write committed: the
//     write fails, it answers nobody, and retries until the core closes it;
//   - it lost the leadership after the write committed and still answers
//     the members it has before the core closes it: the new coordinator's
//     write is applied after that one, so goes above it (the store refuses
//     any number not above the recorded one, offsets.ErrGenerationTaken).
//
// The recorded generation outlives DeleteGroup: a group used again
// continues above it (a member of the deleted group may still be reading,
// unaware).
//
// # Coordinator failover
//
// In a cluster one node runs the coordinator (the metadata leader); a
// node that runs alone hands its groups over to itself when it restarts
// (the core's StateStore is then the node's DB). With Config.States it
// records each generation's membership once the
// assignment is known (setAssignments), and the members' SyncGroup answers
// wait for that record: no member learns an assignment the next
// coordinator would not know. A group whose last member left has its
// record removed. The records of one group are saved one at a time, in
// order; a failed save is tried again every second while the generation
// lasts.
//
// When the metadata leader changes, the core makes a new coordinator and
// calls Restore for every recorded group, with the generation recorded
// for it in the GenerationStore:
//
//   - the members are back in their generation with their assignments,
//     Stable, their sessions starting at the takeover: a member that keeps
//     heartbeating, and committing in its generation, notices nothing;
//     one that stopped is removed at the end of its session;
//   - a group whose recorded generation is above its record's (a
//     rebalance had started, or a generation formed whose assignment no
//     member learned) starts a rebalance at once: members learn of it at
//     their next heartbeat, as from the previous coordinator, and the next
//     generation continues above every recorded one;
//   - without Config.States, or for a group whose record was too large
//     (MaxStateBytes),
//     the new coordinator knows no member: heartbeats and commits get
//     ErrUnknownMember and the members join again as new members (logd's
//     clients claiming the partitions they hold, Subscription.Owned;
//     Kafka clients treating them as lost). A member that lost contact
//     with the cluster entirely is removed after its session timeout.
package groups
