// Package meta is logd's cluster metadata: the nodes, the topics with their
// configs and partition placement, the consumer groups' committed
// offsets, generations (OpGroupGeneration: the group coordinator
// records a generation here before any member learns it) and membership
// (OpGroupState: each completed generation's members and assignments,
// which the next leader's coordinator takes over), and the users
// and ACLs (auth.go: package auth's encodings, kept opaque), replicated by
// one Raft group (replication.MetaGroup) on every node of the cluster.
//
// # State and commands
//
// The state machine (FSM) holds the state in memory; committed offsets live
// in an offsets.Store over an in-memory Pebble DB, so that the server reads
// them through the same code as on a single node. Every change is a Command
// (JSON) applied through Raft; the leader decides everything that is not
// deterministic (a topic's creation time, its placement, a commit's time)
// and puts it in the command, so every replica applies the same state.
// Snapshots are the whole state as JSON, offsets and generations included (they are small:
// one row per group and partition). The group's Raft log is a
// replication.PebbleLogStore in the node's DB, compacted after snapshots.
//
// A topic's identity is its name and its creation time (Topic.Config's
// CreatedMs): a topic deleted and created again under its name is another
// topic, with other Raft groups (GroupOf), so no replica of the old one can
// ever vote in the new one's elections.
//
// # Placement
//
// Topic.Replicas[p] lists the nodes holding partition p, its preferred
// leader first. Topic.Initial[p] is the set the partition's group was
// created with: exactly those nodes bootstrap the group, each with the same
// configuration (Raft allows bootstrapping every server with an identical
// configuration). A node that receives a replica later is added to the
// group by its leader and never bootstraps.
//
// # The group
//
// Group is this node's replica (group.go): Apply replicates a Command on
// the leader; a write handled by a follower is forwarded to the leader by
// the server. Reads of the state that must be current (a committed offset,
// whether a topic exists) call ConfirmRead first, which proves with a
// barrier started after the read that this replica leads and has applied
// everything committed before (replication.ReadIndex). The group sends
// commit notices once a second, as partitions do, and its leader
// publishes each command followers act on with a barrier, so they apply
// it one round trip after it committed (group.go). Membership changes
// go through AddVoter and RemoveServer; no caller outside package
// replication holds the group's *raft.Raft.
package meta
