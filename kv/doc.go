// Package kv is the key-value view of a compacted topic: per partition, an
// index from each key to the offset and timestamp of its newest record,
// kept in the node's Pebble store.
//
// # What it owns
//
// The keys under the prefix "kv/" of the node's shared Pebble DB; no other
// package writes them, and this package writes no other key. It reads the
// partition's log (through the Log interface) and never writes it: a put
// is a produce, which the broker makes.
//
// # The index is a cache of the log
//
// The index records the offset it has read the log up to. Before it
// answers, Store catches up: it reads the partition's log from there to
// the high watermark, in chunks of at most ChunkBytes (so memory is
// bounded whatever the backlog), and applies each record in offset order:
// a record with a key sets the key's entry, a record with a null value (a
// tombstone) removes it, a record without a key and a control batch
// change nothing. The replicated write path is untouched: nothing here
// runs when a record is appended or applied. Because a lookup first
// catches up to the high watermark read after its caller's proof of
// currency (in a cluster, the leader's read barrier), it is never behind
// what was acknowledged before it began.
//
// The index is rebuilt from the log start (its partition's keys removed,
// then the log read again) when
//
//   - it has no state for the partition (first use, or a node that lost
//     its Pebble store);
//   - its state or an entry does not decode (damaged);
//   - the partition's incarnation differs (the topic was deleted and
//     created again under the same name);
//   - the log start passed the offset it has read up to (retention or
//     DeleteRecords removed records it never saw), or the high watermark
//     is below it (the log is not the one it indexed).
//
// Compaction needs no rebuild: the cleaner keeps every key's newest record
// at its offset, so an entry stays true; a tombstone the cleaner removes
// had already removed its key here. An entry below the log start (its
// record deleted by retention under compact,delete) reads as absent.
//
// Index writes are not synced (pebble.NoSync): each chunk's entries and
// the offset read up to are one Pebble batch, so a crash loses a suffix of
// chunks and the index, consistent, catches up again from the log.
//
// # Key layout
//
//	partition prefix  = "kv/" topic 0x00 partition
//	state key         = partition prefix 's'
//	entry key         = partition prefix 'k' key
//	partition         = uint32, 4 bytes big-endian
//
// Topic names hold no 0x00 byte (routing.ValidateTopicName), so the prefix
// of one partition is never a prefix of another's; entries sort by key
// bytewise, so the entries whose keys start with p are one range.
//
// # Value layout
//
//	state:  byte 0 version 1, bytes 1-8 incarnation, bytes 9-16 the
//	        offset read up to (the next offset to read), int64 big-endian
//	entry:  byte 0 version 1, bytes 1-8 offset, bytes 9-16 timestamp (ms),
//	        int64 big-endian
//
// A value of another version or length is damage (ErrCorrupt inside the
// package), which a rebuild repairs.
//
// # Concurrency
//
// A Store is safe for concurrent use. Catch-up and lookups of one
// partition are serialized by a lock per partition; partitions proceed in
// parallel.
package kv
