// Package broker is one logd node's transport-neutral core: what the gRPC
// front-end (internal/server), the Kafka listener (kafka/) and the HTTP
// API (internal/httpapi/) call. They use the types and error kinds of
// partition, offsets and log, never their storage, and nothing of
// replication; a group's requests go through the broker's group methods
// (groups.go: GroupMember, DescribeGroup, ListMemberGroups), which take the
// principal and authorize once.
//
// It owns, for one node: the data directory (Pebble metadata store, the
// partitions' segment logs), the topics (single node, or Raft-backed
// through package cluster), produce (CheckBatch, producer dedup and
// pipelining through partition, acks), fetch over many partitions with a
// long poll (MinBytes, MaxBytes, MaxWait) under a read budget, live-tail
// readers, list offsets, DeleteRecords and OffsetForLeaderEpoch's
// EpochEnd, committed offsets and their lag, the disk guard
// (diskspace.go, guardedfs.go), retention, the node's Prometheus metrics,
// the consumer-group coordinator (coordinator.go: it records each group
// generation where committed offsets live before members learn it, so
// generations stay unique across restarts and metadata-leader changes),
// and users, ACLs and
// the one authorization point (auth.go, authstore.go, users.go).
//
// Invariants:
//
//   - The API speaks Go types and typed errors (errors.go), never a
//     transport's: front-ends map errors in one file each.
//   - Batches pass as stored bytes, never re-encoded.
//   - In a cluster a partition is served by its leader only: writes once
//     replication.Replica.Leading proves the term, reads once a barrier
//     started after the read arrived confirms the leadership
//     (cluster.Linearizable). Metadata writes (topics, committed offsets)
//     run on the metadata leader; other nodes answer *NotLeaderError with
//     Untouched set, which a front-end may pass on (Forward) or hand to
//     its client, except topic changes (create, alter, add partitions,
//     delete), which the broker passes on to the leader itself, for every
//     front-end. Passed on, a request goes over the peer service on the
//     Raft port (peer.go) with its principal as data, and the leader
//     authorizes it.
//   - DeleteRecords moves a partition's log start on every replica (a
//     replicated entry; log.AdvanceStart), as retention does by whole
//     segments; the start never moves back.
//   - Every method that takes a Principal authorizes it (Authorize)
//     before any effect; a denial is a *auth.DeniedError matching
//     ErrDenied, audited.
//   - Every request is admitted (enter) and counted until it is answered;
//     Close waits for them before closing the logs.
//   - Fetch reads under the node's read budget (MemBudget, 128 MiB): what
//     an answer holds counts until its Release. A fetch that long-polls
//     holds none of it while it waits (it reads again when it wakes), and
//     a front-end releases an answer as soon as it is sent or accounted
//     for elsewhere (the Kafka listener moves it to the connection's own
//     budget once read), so that no client that is slow to read can keep
//     the node's other reads waiting.
//
// # The produce pipeline
//
// A produced batch goes through these stages, in this order, each once.
// A stage hands the next what it proved, so nothing is checked twice on
// the way in: the batch's CRC is computed once on a single node and on a
// cluster leader, and once on each follower (reads from disk, a fetch's or
// Raft's sending entries to a follower, verify what they read).
//
//  1. Admit (StartProduce): authorize the principal to write the topic,
//     enter (the request counts until answered; Close waits for it), find
//     the partition, refuse the produce when the disk is full.
//  2. Check (CheckBatch): the size, then batch.Validate: one whole v2
//     batch, CRC-32C, attributes, producer fields and every record
//     (decompressed once when compressed). It returns a batch.Checked,
//     the only proof the stages below accept.
//  3. Sequence (partition.StartAppend, StartAppendVia): under the
//     producer's lock, an idempotent producer's batch is checked against
//     the batches it appended and those still pending: a retry of a
//     pending batch waits for the original, a remembered one is answered
//     with its offsets, a gap or a fenced epoch is refused. Otherwise the
//     batch becomes pending, behind the producer's earlier ones.
//  4. Start, in the partition's order. Single node: log.AppendStart
//     writes the batch under the log's lock. Cluster: the leader, once
//     replication.Replica.Leading has proved its term with every earlier
//     entry applied, hands the batch to Raft (Replica.Start); Raft's log
//     store takes the batch.Checked it was started with, and a follower's
//     checks the bytes it receives (batch.CheckFrame). In both, the log
//     alone assigns the offsets and the leader epoch (0, or the Raft
//     term), in place, and checks that the Raft index follows on.
//  5. Durable: the fsync (group commit: the batches written meanwhile
//     share it); in a cluster, with acks=all, a quorum's, then applied
//     here (the high watermark moves, the producer's state records the
//     batch on every replica), with acks=leader, the leader's own.
//  6. Answer (ProduceFuture.Wait): the offsets, or a retry's original
//     ones; the metrics are counted and the request leaves.
//
// StartProduce runs stages 1 to 4 and returns the ProduceFuture: a
// front-end that pipelines (the gRPC stream on Lanes, the Kafka listener)
// starts a partition's requests in arrival order and waits for them in
// parallel, so a producer's next batches are written while the earlier
// ones wait for their fsync or quorum. Produce is StartProduce and Wait,
// waiting first for a sleeping partition to wake.
//
// Lifecycle: Open (recovery; the front-ends' listeners may not exist
// yet), Ready with the addresses the front-ends advertise (the disk guard
// and, in a cluster, registration and the control loops start), Shutdown
// (refuse new requests, end long polls), Close.
package broker
