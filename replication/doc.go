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
// # One port per node, one connection per peer
//
// All groups of a node share one TCP listener (package
// replication/transport), and all of a node's groups' connections to a
// peer share a few TCP connections (4 yamux sessions, a group always on the
// same one), on which each of Raft's connections is a stream with its own
// flow-control window. A stream
// starts with a small header naming its group (magic, version, group id);
// the accepting node reads it under a deadline, answers with one status
// byte and hands the stream to that group's Raft transport, or closes it
// when the header is bad or the group unknown. Raft's own RPC framing
// follows unchanged. A session that fails (peer restarted, link cut,
// keep-alive unanswered) fails its streams and is dialed again by the next
// Dial.
//
// A partition group's Raft RPCs do not use streams of their own: its
// transport is package replication/raftrpc, where every group's
// AppendEntries, votes and TimeoutNow to a peer share one stream per
// direction (frames naming the group), written by one goroutine that puts
// many groups' frames in one write; only InstallSnapshot and the segment
// copy (segcopy.go) open a stream of the group. The metadata group keeps
// hashicorp/raft's NetworkTransport (NetworkTransport, nettransport.go).
// Both take Raft's heartbeat fast path only for a follower's heartbeat of
// its own term: hashicorp/raft handles a fast-path heartbeat outside its
// loop, and one of a newer term would let a leader store its last appends
// under the new leader's term (hashicorp/raft#695).
//
// # Idle groups
//
// An idle group costs its leader's empty AppendEntries to each follower:
// heartbeats and commit notices. A partition's leader runs with a longer
// HeartbeatTimeout than its followers, so that it heartbeats at most every
// min(HeartbeatTimeout, LeaderLeaseTimeout)/3, and partitions default to a
// CommitTimeout of 1 s and a lease of HeartbeatTimeout (heartbeat.go has
// the argument; docs/performance.md the numbers).
//
// # Waiting on Raft
//
// hashicorp/raft never answers a request still queued when its instance
// shuts down, and a replica's instance shuts down each time it falls
// asleep. Every wait on a future of a partition's Raft (and of the
// metadata group's) is Await, which ends with the instance (await.go);
// only logd shuts an instance down (ShutdownOnRemove is off).
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
//	raft LogCommand that is a logd command (byte 16, a batch's magic, is 101;
//	                         format in command.go) -> log.Entry{Kind: 64}: owns
//	                         no offset; given back to Raft as a LogCommand
//	any other raft LogType -> log.Entry{Kind: 1 + LogType}: opaque, owns no offset
//
// A sleep marker (Replica.Hibernate, sleep.go) is a logd command that
// applies as nothing. A share state (Replica.PutShareState,
// sharestate.go) is a logd command that replaces a share group's state of
// the partition in the state machine and its snapshots. The other logd
// command is DeleteRecords
// (Replica.DeleteRecords): the
// leader checks the offset against its high watermark and replicates the
// command; applying it on every replica moves the log's start
// (log.AdvanceStart, durable in the log's logstart file before it is
// visible), so records below it are never read again on any replica. A
// restart replays it (a no-op when the start is there already), and a
// snapshot carries the start (LogStartOffset) to a follower that catches
// up from one.
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
//     rather than leaving a gap): a log that ends exactly at the snapshot
//     (its last entry of the snapshot's index and term, and the snapshot's
//     high watermark as next offset) is kept and Raft appends after it; otherwise TruncateIndexFrom(first), after
//     which the log accepts any first index (snapshot index + 1) -- but
//     only when the emptied log's next offset (its start offset) equals the
//     snapshot's high watermark, so the leader's offsets carry on unchanged.
//
// Offsets never diverge: StoreLogs into an empty log at an index above 1
// also requires a restored snapshot whose high watermark is the log's next
// offset.
//
// Raft reads each entry back soon after storing it (a leader once per
// follower it sends the entry to, a follower to apply it): the entries the
// node's logs stored last are kept in memory for those reads, under one
// byte budget per node (entrycache.go), so they are not read from the
// segment file and CRC-checked again.
//
// Retention and Raft: on restart Raft restores its latest snapshot and
// replays every entry after it, and panics on a missing one. Retention of a
// replicated partition must therefore trim only below Replica.TrimLimit
// (the first segment holding an entry after the latest durable snapshot).
//
// The Raft configuration must keep TrailingLogs >= 1 so that a compaction
// never covers the last index (see DeleteRange).
//
// # Catching up by segment copy
//
// A follower whose log cannot continue at the snapshot the leader installs
// (it fell behind the leader's log start: retention deleted the segments
// holding the entries it lacks) is brought up to date by copying the
// leader's segments, not by replaying history through Raft.
// PartitionFSM.Restore, which Raft calls while the install waits, asks the
// leader (Raft has just learned its address from the install) for every
// segment holding an entry up to the snapshot's index (Raft's snapshot
// metadata, remembered when Raft opens the snapshot), streams them into a
// log.Install -- bounded chunks, a CRC-32C per segment on the wire, every
// entry verified, entries after the snapshot's index cut, temp files
// fsynced, then committed behind a marker so that a crash leaves the old
// log or the new one -- and checks that the result ends at the snapshot's
// index and high watermark. The follower's log then holds the leader's
// records at the leader's offsets and Raft indexes from the leader's log
// start, the log store keeps it through Raft's removal above, and Raft
// appends from the snapshot index + 1. When the leader holds no entry up
// to the snapshot's index any more, the log restarts empty there
// (log.ResetTo). The copy travels on the group's own connections on the
// node's Raft port: a connection whose first byte is 0xC5 (never a Raft
// RPC type) is a copy request, served by the leader's Replica from its
// log (segcopy.go has the wire format).
//
// When the copy fails (leader unreachable, a segment deleted meanwhile,
// bad bytes) or the partition closes, the log is unchanged and the install
// refused (ErrOffsetGap); Raft's leader retries it with backoff. Raft has
// already stored the installed snapshot, so a follower restarted then
// restores it over its old log, refuses the leader's appends (the store
// refuses a gap in indexes) until the leader walks back to its log start,
// and is sent the snapshot again. The copy runs while the leader's
// InstallSnapshot RPC waits (10s): a longer copy makes the RPC time out,
// the copy goes on, and the leader's retry finds the log caught up. Each
// catch-up copies the whole retained range again (not only what is new
// since an earlier, timed-out one).
//
// # Partition state machine
//
// The log is opened with ManualHighWatermark: readers see only what Raft
// has committed. Applying a batch entry moves the high watermark to the
// batch's next offset and returns the batch's offsets (from its header, via
// internal/batch.ParseHeader); applying again after a restart is idempotent.
// Snapshots hold metadata only (log start offset, high watermark, last
// applied index and term; producer dedup state later), never record data;
// restoring one moves the log start up to the snapshot's.
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
//	p, err := n.OpenReplica(replication.PartitionGroup("orders", 0), l, replication.ReplicaOptions{})
//	err = p.Bootstrap(servers) // once, on one replica of a new group
//	r, err := p.Append(ctx, batch) // acks=all; AppendLeader for acks=leader
//	// r.BaseOffset..r.LastOffset; readers use l.Read below l.HighWatermark()
//
// Pipelining: Append and AppendLeader are Start followed by Write.Wait.
// Start hands the batch to Raft at once (entries are stored in the order
// Start is called) and returns a *Write to wait on, so one producer's
// batches share AppendEntries and fsyncs; its after argument (the
// producer's previous pending write) makes the leader's log store refuse a
// batch whose predecessor Raft did not store, so a producer's batches
// never land after a gap. Leading waits, once per term, for a barrier
// proving everything committed before is applied, before the leader checks
// idempotent producers' sequences against its state. The server's dedup of
// started-but-not-applied batches lives in partition (StartAppendVia).
//
// A replica that is not the leader answers a *NotLeaderError naming the
// leader's node id and Raft address; mapping it to the leader's API address
// is the metadata group's job. Retention of a replicated log trims below
// Replica.TrimLimit only. NewCollector exports the Raft state to
// Prometheus; PlaceReplicas and ReplaceNode compute replica placement, and
// Replica.TransferLeadership moves leaders to their preferred node.
//
// The in-process cluster harness for multi-node tests is package
// replication/clustertest; its links go through replication/faultnet.
package replication
