// Package retention decides which segments of a partition's log the
// retention policy no longer needs, and runs the Trimmer that deletes them.
//
// # What it owns
//
// The retention decision exists once, in Decide: a pure function of a
// partition's segments, the time and the Policy. The Trimmer applies it to
// every partition the server names, through log.DeleteSegmentsBefore, which
// deletes whole segments and advances the log start offset atomically with
// respect to readers (a read below the new start gets OUT_OF_RANGE; that is
// the log's invariant, not this package's).
//
// # Policy
//
// A Policy bounds a partition's log three ways. A limit <= 0 (-1 by
// convention, as in Kafka) is unlimited. Topic defaults (DefaultPolicy):
// 7 days, unlimited bytes, unlimited records. The zero Policy keeps
// everything.
//
//   - RetentionTime: a closed segment may go once its newest record is older
//     than RetentionTime: MaxTimestamp < now - RetentionTime. A segment
//     holding no record is aged by its creation time instead. Record
//     timestamps come from producers; a segment holding a timestamp in the
//     future stays until that time is past, as in Kafka.
//   - RetentionBytes (per partition): Kafka's rule. The oldest closed segments
//     go while what remains, the active segment included, is still at least
//     RetentionBytes: the log keeps at least RetentionBytes and at most
//     RetentionBytes plus one segment. Whole segments only; the active one
//     never.
//   - RetentionRecords: the last RetentionRecords records (counted back from
//     the end of the log) are kept. A closed segment may go only when all its
//     records are older than those.
//
// A segment may go if any limit lets it go; the limits combine by taking the
// longest deletable prefix. Deletion is always a prefix of the segment list,
// oldest first: as in Kafka, the first segment a limit keeps stops that limit
// (a segment with an older timestamp behind a newer one waits for it).
//
// # Invariants
//
//   - Never the active segment. The last segment of the list is treated as
//     active whatever its Active flag says, and no segment at or after the
//     first active one is deleted.
//   - Only whole closed segments go; the decision is an offset (Before) such
//     that every deletable segment lies entirely below it.
//   - The policy is read at every trim (the targets function returns it), so
//     `logd topic alter` takes effect at the next trim without a restart.
//
// # Trimmer
//
// The Trimmer trims on Run's start, every Interval, and whenever Kick is
// called (the server kicks after a segment roll). Kicks coalesce: any number
// of kicks while a trim runs cause one more trim. TrimNow trims synchronously
// (tests, admin). Trims never overlap. Run returns when its context ends and
// leaves no goroutine behind.
//
// Metrics (the Trimmer is a prometheus.Collector), by topic:
//
//	logd_retention_deleted_segments_total{topic}
//	logd_retention_deleted_bytes_total{topic}
//	logd_retention_deleted_records_total{topic}
//
// The per-partition log start offset gauge belongs to the server, which owns
// the partitions.
package retention
