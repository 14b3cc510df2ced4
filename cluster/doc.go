// Package cluster is a node's control plane in cluster mode: its Raft port
// (replication.Node), its membership in the metadata group
// (replication/meta), and the loops that keep its replicas in line with
// the metadata.
//
// It owns:
//
//   - identity: the cluster id in the data directory (identity.go), made at
//     bootstrap, learned before joining, checked on every Raft connection
//     and before every join and rejoin;
//   - membership: joining through any member (Config.Join) over the peer
//     channel, the metadata leader calling the joining node back at its
//     Raft address before it adds a voter or changes addresses; registering the
//     node's advertised addresses, removing a node (its replicas move to the
//     least loaded others first);
//   - placement: a new topic's replica sets (replication.PlaceReplicas over
//     each node's load);
//   - reconciliation: local topics created, altered or deleted and replicas
//     opened or closed as the metadata says; on each partition this node
//     leads, the group's voters made the placement's;
//   - leader spreading: leadership handed to each partition's preferred
//     replica (the first of its set);
//   - follower lag: logd_raft_follower_lag_entries, measured by each leader;
//   - the metadata writes (topics, placement, committed offsets), run on the
//     metadata leader only, and the answer to "who leads this partition".
//
// Invariants: only the metadata leader writes metadata, after a barrier in
// its term (Cluster.Barrier); a partition is served by the leader of its
// group only (Cluster.Replica); a read that must be current is confirmed by
// a barrier started after it arrived (Cluster.Linearizable). Everything of
// Raft goes through package replication's methods: no *raft.Raft here.
//
// The package speaks Go types and errors only. Every call one node makes
// of another runs on the peer channel of the Raft port (peerservice.go):
// joining, a node's replicas' state and a partition leader's offsets
// (peers.go), and the operations the core registers (Handle) for the
// requests it passes on to a leader, with their principal as data. Errors
// keep their kinds across a call (peererrors.go).
// Its errors are of the generic kinds of package internal/kind
// (kind.Errorf), or the types and sentinels of errors.go.
package cluster
