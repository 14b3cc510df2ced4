// Package offsets stores committed consumer offsets and holds the pure rules
// the server applies to them: lag, trimmed offsets and reset targets.
//
// # What it owns
//
// A consumer group commits, per (topic, partition), the offset of the next
// record it wants to read, with an optional metadata string. The Store keeps
// these in the node's shared Pebble DB under the key prefix "offsets/"; no
// other package writes keys with that prefix, and this package writes no
// other key, except the groups' generations and states below.
//
// # Group generations
//
// The Store also keeps, per group, the highest generation a group
// coordinator recorded before telling any member of it (package groups:
// generations stay unique when the coordinator moves or restarts):
//
//	key    = "groupgen/" enc(group)
//	value  = byte 0 version 1, bytes 1-4 the generation, int32 big-endian
//
// RecordGeneration only raises it (a generation not above the recorded one
// is refused with ErrGenerationTaken and changes nothing). DeleteGroup and
// DeleteTopic leave it: a group deleted and used again continues above its
// old generations (docs/groups.md).
//
// # Group states
//
// On a node that runs alone the Store also keeps each group's last
// completed generation's membership (members, their sessions, metadata and
// assignments: groups.EncodeGroupState, opaque here), so a restarted node's
// coordinator takes the group over and its members carry on (in a cluster
// the metadata group keeps these records instead):
//
//	key    = "groupstate/" enc(group)
//	value  = the encoded state
//
// SaveGroupState writes it synced; a group without members has none.
//
// # Key layout
//
//	key        = "offsets/" enc(group) enc(topic) partition
//	enc(s)     = s with every 0x00 byte written as 0x00 0xFF, then 0x00 0x01
//	partition  = uint32, 4 bytes big-endian (partitions are >= 0)
//
// enc is order-preserving and prefix-free: enc(a) < enc(b) exactly when
// a < b bytewise, and no encoded string is a prefix of another. So
//
//   - no two (group, topic, partition) triples share a key, whatever bytes a
//     group name holds (groups are free-form; topics cannot hold 0x00 but get
//     the same encoding so one decoder serves both);
//   - keys sort by group, then topic, then partition number;
//   - "offsets/" enc(group) is the exact key range of one group and
//     "offsets/" enc(group) enc(topic) of one group's topic, so Fetch,
//     Groups and DeleteTopic are range scans that never see a neighbour.
//
// # Value layout
//
//	byte 0      version, 1
//	bytes 1-8   committed offset, int64 big-endian
//	bytes 9-16  commit time, ms since the Unix epoch, int64 big-endian
//	bytes 17-   metadata, raw bytes (at most MaxMetadataBytes)
//
// A value of another version or shorter than 17 bytes is reported as
// ErrCorrupt with its key, never a panic.
//
// # Invariants
//
//   - Commit writes one Pebble batch with Sync: all offsets of a call become
//     durable together, or none do; when Commit returns nil they survive a
//     crash. Each offset is its own small key: a commit never rewrites a
//     group's other offsets (docs/architecture.md: offsets are small keyed writes).
//   - Committed offsets are >= 0. The store keeps what the group committed,
//     even when retention has since trimmed it: Lag reports such an offset as
//     trimmed instead of the store silently clamping it.
//   - The commit time is stamped by the store's clock, not the client's.
//
// # Lag, trimmed offsets and resets
//
// Lag follows docs/architecture.md: lag = high watermark - committed. An offset below the
// log start was trimmed by retention: Lag says so, counts the records lost
// (log start - committed) and resumes the consumer at the log start.
//
// A reset target (earliest, latest, an offset, an RFC 3339 time, or
// -DURATION before now) is parsed once by ParseResetSpec and resolved per
// partition by ResetSpec.Resolve. Like Kafka's kafka-consumer-groups
// --reset-offsets, an explicit offset outside [log start, high watermark]
// is clamped to the nearer end, and the Resolution says it was clamped so
// the CLI can warn.
//
// # Metrics
//
// LagCollector computes logd_consumer_group_lag and
// logd_consumer_group_trimmed_records_total at scrape time from positions
// the server enumerates.
package offsets
