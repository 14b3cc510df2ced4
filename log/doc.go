// Package log is one partition's storage: an append-only sequence of record
// batches in segment files, with sparse indexes, crash recovery, group
// commit, and lookups by offset, by time and by Raft index. It is also the
// partition's Raft log store: every record is written to disk once.
//
// # Files
//
// A log is a directory. Each segment is named by its base offset (the offset
// of its first record), zero-padded to 20 digits; beside every closed
// segment lie its offset index and its time index:
//
//	00000000000000000000.log        closed segment
//	00000000000000000000.index      its sparse offset / Raft index
//	00000000000000000000.timeindex  its sparse time index
//	00000000000000004211.log        the active (last) segment: indexes in memory only
//	*.tmp                           an index being written; deleted on open
//	*.copy                          a segment (or index) being installed
//	segments.install                an install's marker (see Installing segments)
//
// The log start offset is the base offset of the oldest segment (retention
// deletes whole segments, oldest first, so that start survives a crash
// without a side file), or a later offset AdvanceStart set (Kafka's
// DeleteRecords), recorded in the file logstart (format in logstart.go,
// written temp, fsync, rename, directory fsync before the new start is
// visible). Records below the start keep their bytes until retention
// deletes their segment whole; reads never return them.
//
//	logstart                        the log start inside the oldest segment, if moved there
//	cleaner                         the cleaner's clean point and stamps (compact_state.go)
//
// # Entries
//
// A segment file is a concatenation of entries. Every entry starts with the
// same 17-byte prefix as a Kafka v2 record batch (all integers big-endian):
//
//	offset size field
//	     0    8 base offset   the log's next offset when the entry was written
//	     8    4 length        bytes after this field (entry size - 12)
//	    12    4 epoch         Raft term (low 32 bits for logd entries)
//	    16    1 magic         2: record batch, 100: logd entry
//
// Magic 2 entries are Kafka v2 record batches (package internal/batch has
// the full layout), stored byte for byte as the producer sent them except
// the base offset, assigned at append, and the partition leader epoch, which
// holds the Raft term. Both lie outside the batch CRC, so the CRC the
// producer computed still covers every stored byte that matters. A batch
// owns the offsets base offset .. base offset + last offset delta.
//
// Magic 100 entries are logd's own. They own no offset (their base offset
// equals the next batch's) and are skipped by Read:
//
//	     0   17 prefix        (magic 100)
//	    17    4 CRC-32C       (Castagnoli) of bytes 21..end
//	    21    1 type          1: segment header, 2: Raft entry, 3: compacted
//	    22    … payload
//
//	segment header payload (always the first entry of a segment):
//	    22    8 base offset   of the segment (equals its file name)
//	    30    8 first index   Raft index of the segment's first entry after this header
//	    38    8 created       Unix nanoseconds
//
//	Raft entry payload (an Entry whose Kind is not KindBatch):
//	    22    1 kind
//	    23    8 term          (full 64 bits)
//	    31    … data          opaque
//
//	compacted payload (a batch the cleaner removed; compact.go):
//	    22    8 next offset   the offsets base offset .. next offset - 1
//	                          are the removed batch's, and hold no record
//
// A compacted entry is the one logd entry that owns offsets: readers step
// over it (a compacted partition has gaps in its offsets), and a read
// whose offset lies in a segment's trailing gap continues in the next
// segment.
//
// # Raft indexes
//
// Raft indexes are implicit: every entry after the segment header consumes
// exactly one index, so the entry at ordinal n (0-based, header excluded) of
// a segment has index FirstIndex + n. Append is AppendEntries of one batch
// at the next index with the current term (0 without Raft). A log that holds
// no entry (new, or truncated to nothing) accepts any first index; its
// active segment's header is rewritten to carry it.
//
// The log is the one layer that assigns a batch's offsets and leader epoch
// and checks that indexes follow on, under the lock that orders every
// write. It computes no batch CRC on append: AppendStart and AppendEntries
// take a batch.Checked, the proof that the caller checked the batch once
// (batch.Validate on produce, batch.CheckFrame on a follower); only Append,
// for batches no caller checked, checks the frame itself. Reads verify
// every entry they read.
//
// A segment is only rolled once it owns at least one offset, so two segments
// never share a base offset (a name).
//
// # Indexes
//
// Indexes are caches of the segment: rebuilt from it whenever in doubt.
// The offset index has an entry every IndexIntervalBytes of segment; both its
// ordinal and its offset columns increase, so one binary search serves
// lookups by offset and by Raft index:
//
//	offset index entry (12 bytes)
//	     0    4 ordinal         of the entry at position (0 = first after the header)
//	     4    4 relative offset entry base offset - segment base offset
//	     8    4 position        in the segment file
//
// The time index has an entry when the running maximum timestamp has grown
// and IndexIntervalBytes have passed since its last entry. Its timestamp is
// the largest record timestamp of every batch before position, so a search
// for time t may start at the last entry whose timestamp is below t:
//
//	time index entry (16 bytes)
//	     0    8 max timestamp   of every batch before position (ms)
//	     8    4 relative offset
//	    12    4 position
//
// The active segment's indexes live in memory and are rebuilt by the tail
// scan on open. When a segment is rolled its index files are written to a
// temporary file, fsynced, renamed and the directory fsynced. Both files end
// in the same 76-byte footer:
//
//	 0    4 magic           "LDOX" (offset index) or "LDTX" (time index)
//	 4    4 version         1
//	 8    4 index entries   count of entries before the footer
//	12    8 segment size    bytes of the segment this index covers
//	20    8 base offset
//	28    8 next offset     offset after the segment's last record
//	36    8 first index     Raft index of the first entry
//	44    8 entries         Raft entries in the segment
//	52    8 max timestamp   (-1: no record)
//	60    8 created         Unix nanoseconds, from the segment header
//	68    4 CRC-32C         of the index entries before the footer
//	72    4 CRC-32C         of footer bytes 0..71
//
// Opening a log reads only the footers of closed segments (one small read
// each) and checks their CRC, that both agree, and that they match the
// segment's name and size and the next segment's base offset; the entries'
// CRC is checked once, the first time the segment is read. An index that
// does not check out is rebuilt by scanning its segment (RecoveryReport
// counts it). An index file's size is only checked against the footer's
// entry count, never taken as one.
//
// # Recovery
//
// Open scans only the active segment, verifying every entry (the batch CRC,
// or the logd CRC) and the continuity of base offsets, and cuts the file at
// the first torn or corrupt entry (truncate, fsync); RecoveryReport says
// what was cut and which indexes were rebuilt. Open costs time proportional
// to the active segment, not the whole log.
//
// # Durability
//
// With FsyncAlways (the default) appenders write under the log's mutex and
// then wait for a sync covering their bytes; one syncer goroutine loops:
// take the written end, fdatasync, publish it as durable, wake the waiters.
// Appends that arrive during an fsync share the next one (group commit).
// The syncer runs only while bytes wait for their fsync: the write that
// finds none starts it, and it exits once caught up (an idle log keeps no
// goroutine; commit.go).
// FsyncInterval syncs in the background; FsyncNever leaves it to the OS,
// except at roll, truncation and close. The high watermark is the durable
// end (FsyncAlways) or the written end, unless ManualHighWatermark, when the
// owner (Raft) moves it, clamped to the durable end.
//
// A failed write (ENOSPC) is cut back to the last whole entry; the append
// fails and the next one may succeed. A failed fsync leaves the page cache in
// an unknown state, so the log refuses further appends until it is reopened.
//
// Segment files are not preallocated: with fallocate'd extents every small
// fsync'd append converts extents and becomes far slower.
//
// # Crash safety
//
// The argument rests on these assumptions about the file system: fdatasync
// makes a file's written bytes and size durable; a directory fsync makes
// creations, renames and removals in it durable; rename replaces a file
// atomically; a crash may lose or tear any write not yet synced, but not
// synced ones. Then:
//
//   - An acknowledged append (FsyncAlways) was covered by an fdatasync; the
//     segment file it lives in was created, and its directory entry fsynced,
//     before any append to it.
//   - Anything after the last sync may be torn or missing; the tail scan
//     keeps exactly the prefix of whole entries whose CRCs and base offsets
//     check out, and cuts the rest before the log is used.
//   - Index files appear only whole (temp, fsync, rename), and are believed
//     only when their footer CRC and the segment they describe agree.
//   - Segments are removed one at a time with a directory fsync between:
//     oldest first for retention (the start offset is the oldest base left),
//     newest first for truncation (a shorter log, never one with a hole).
//
// After Open a ManualHighWatermark log has its high watermark at the start
// offset until the owner moves it.
//
// # Installing segments
//
// A replica that fell behind another's log start catches up by copying its
// segments: OpenSegment reads a segment's bytes as stored (holding it against
// retention), Install stages copies beside the log as *.copy (streamed in
// bounded chunks, fsynced, every entry verified as the tail scan does, Raft
// indexes continuing, cut after a given index, index files written) and
// Commit replaces every segment at once. ResetTo is an install of one empty
// segment: the log restarts at an offset and Raft index. The commit point is
// the marker segments.install (CRC-32C; the staged base offsets), written
// temp, fsync, rename, directory fsync; then the staged files are renamed
// over the old names and every other segment removed, and the marker last.
// Open finishes an install whose marker it finds and removes *.copy files of
// one that did not commit, so a crash leaves the old log or the new one.
//
// # Memory and handles
//
// Reads use ReadAt into buffers sized by the request (at least one whole
// batch), closed segments' indexes are searched with ReadAt, and at most a
// bounded number of closed segment files are open at once (least recently
// used first closed, never while a reader holds one). A reader holding a
// segment deleted by retention keeps reading its open file.
package log
