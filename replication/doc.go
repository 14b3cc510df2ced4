// Package replication replicates logd's partitions and cluster metadata with
// Raft (github.com/hashicorp/raft). It owns the seams Raft needs: the log
// store over a partition's segment log, the stable store on Pebble, the
// snapshot store, the partition state machine, and one multiplexed network
// port per node.
//
// # Groups
//
// Every partition is its own Raft group, replicated on the partition's
// replicas; one more group, the metadata group, replicates the cluster's
// metadata (nodes, topics, partition placement, topic configs, committed
// consumer offsets). A node runs one Raft instance per group it holds a
// replica of. A group is named by a string id: "meta" for the metadata
// group, "p/<topic>/<partition>" for a partition.
//
// # One port per node
//
// All groups of a node share one TCP listener (package
// replication/transport). A connection starts with a small header naming its
// group (magic, version, group id); the accepting node reads it under a
// deadline, answers with one status byte and hands the connection to that
// group's Raft transport, or closes it when the header is bad or the group
// unknown. Raft's own RPC framing follows unchanged.
//
// # Each record written once
//
// A partition's segment log (package log) is its Raft log store
// (LogStore): there is no second copy of the records in Pebble or in a
// write-ahead log. Raft entries map onto log entries:
//
//	raft LogCommand       -> log.Entry{Kind: log.KindBatch}: Data is exactly one
//	                         Kafka v2 record batch; the log assigns its base
//	                         offset at append and stores the Raft term in the
//	                         batch's partition leader epoch field
//	any other raft LogType -> log.Entry{Kind: 1 + LogType}: opaque, owns no offset
//
// Raft indexes are implicit in the log (a segment's first index plus the
// entry's ordinal), so every entry consumes exactly one index, and record
// offsets stay contiguous across the configuration and no-op entries that own
// none. Offsets are a deterministic function of the log prefix: every replica
// holding the same entries assigns the same offsets. Raft's Log.Extensions
// and Log.AppendedAt are not stored (logd uses neither).
//
// DeleteRange serves each of Raft's uses, told apart by the range, the
// applied index (an entry at or below it is committed and never truncated) and
// whether a snapshot was just restored:
//
//   - suffix truncation of a conflicting uncommitted tail (min above the
//     applied index, max at the last index): TruncateIndexFrom(min);
//   - compaction after a snapshot (min at the first index, max at or below
//     the applied index): a no-op. Retention owns deletion of record data;
//     Raft keeps seeing the older entries, which is harmless;
//   - the removal of every entry after a snapshot is installed or restored
//     (the log store is a raft.MonotonicLogStore, so Raft deletes all entries
//     rather than leaving a gap): TruncateIndexFrom(first), after which the
//     log accepts any first index (snapshot index + 1) -- but only when the
//     emptied log's next offset (its start offset) equals the snapshot's high
//     watermark, so the leader's offsets carry on unchanged. Otherwise the
//     state machine refuses the leader's snapshot install (ErrOffsetGap;
//     Raft's leader then retries with exponential backoff) and the store
//     refuses the removal: the replica keeps its log and stays behind,
//     safely, rather than give records other offsets than the leader did. Catching such a follower up needs segment copy and a log
//     that can restart empty at a given offset; neither exists yet.
//
// Offsets never diverge: StoreLogs into an empty log at an index above 1
// also requires a restored snapshot whose high watermark is the log's next
// offset.
//
// Retention and Raft: on restart Raft restores its latest snapshot and
// replays every entry after it, and panics on a missing one. Retention of a
// replicated partition must therefore trim only below Partition.TrimLimit
// (the first segment holding an entry after the latest durable snapshot).
//
// The Raft configuration must keep TrailingLogs >= 1 so that a compaction
// never covers the last index (see DeleteRange).
//
// # Partition state machine
//
// The log is opened with ManualHighWatermark: readers see only what Raft
// has committed. Applying a batch entry moves the high watermark to the
// batch's next offset and returns the batch's offsets (from its header, via
// internal/batch.ParseHeader); applying again after a restart is idempotent.
// Snapshots hold metadata only (log start offset, high watermark, last
// applied index and term; producer dedup state later), never record data.
//
// The metadata group's log is not a segment log: its commands are small
// and not record batches, and after a snapshot its log must really be
// compacted, which the segment log (trimmed by offset, rolled only by
// segments that own offsets) cannot do. It lives in Pebble
// (PebbleLogStore, "raft/meta/log/<index>").
//
// # Stable and snapshot stores
//
// Raft's term and vote live in the node's shared Pebble DB under a key prefix
// per group ("raft/<group>/"), written with Sync. Snapshots are small
// metadata blobs kept by raft.FileSnapshotStore in a directory per group:
// its write-temp-then-rename-and-fsync protocol is reviewed and crash safe,
// and at a few hundred bytes per snapshot a second store in Pebble would buy
// little (revisit when a node holds thousands of partitions).
//
// # Usage
//
// A node opens one Node on its Raft port and a replica per partition it
// holds; the server appends through the partition's leader:
//
//	n, err := replication.NewNode(replication.NodeConfig{
//		ID: "n1", Listener: ln, DataDir: dataDir, DB: db})
//	l, err := log.Open(dir, log.Options{ManualHighWatermark: true})
//	p, err := n.OpenPartition(replication.PartitionGroup("orders", 0), l)
//	err = p.Bootstrap(servers) // once, on one replica of a new group
//	r, err := p.Append(ctx, batch) // acks=all; AppendLeader for acks=leader
//	// r.BaseOffset..r.LastOffset; readers use l.Read below l.HighWatermark()
//
// A replica that is not the leader answers a *NotLeaderError naming the
// leader's node id and Raft address; mapping it to the leader's API address
// is the metadata group's job. Retention of a replicated log trims below
// Partition.TrimLimit only. NewCollector exports the Raft state to
// Prometheus; PlaceReplicas and ReplaceNode compute replica placement, and
// Partition.TransferLeadership moves leaders to their preferred node.
//
// The in-process cluster harness for multi-node tests is package
// replication/clustertest; its links go through replication/faultnet.
package replication
