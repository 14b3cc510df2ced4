// Package partition owns topics and their partitions on one node: topic
// configs (persisted in the node's Pebble DB), the partitions' logs on disk,
// and the append path's producer deduplication. Key -> partition routing and
// topic-name validation live in package routing, shared with the client.
//
// # Layout
//
//	<data-dir>/meta/                      Pebble: key "topic/<name>" -> TopicConfig (JSON)
//	<data-dir>/partitions/<topic>-<n>/    one log.Log per partition (see package log)
//
// # Invariants
//
//   - A topic exists iff its config key is in Pebble. Create writes the
//     config (synced) after making the partitions' directories, so a crash
//     between leaves only empty directories, which are removed on start.
//     Delete removes the config (synced) first, then renames each partition
//     directory to "<dir>.deleted" and removes it; leftovers are removed on
//     start.
//   - A topic's partition count only grows (AddPartitions): the new
//     partitions' directories are made before the config with the new count
//     is written (synced); a crash between leaves directories of no
//     partition, which the next add moves aside ("<dir>.orphaned-<ns>") so
//     a new partition always starts empty.
//   - Partitions' logs are opened openParallel at a time (a create, an add,
//     a restart: open.go). When one fails, every log opened is closed, a
//     create or add stores no config and removes the new directories, and
//     a restart removes nothing.
//   - Offsets within a partition are assigned by its log; records with one
//     key go to one partition, so per-key order is the log's order.
//   - Idempotent producing: a batch whose producer id is >= 0 is checked
//     against that producer's state in the partition (last sequence and its
//     last five batches). A batch equal to a remembered one is answered with
//     the original offsets and not appended again; one that skips sequences
//     fails with ErrOutOfOrderSequence; an unknown producer is accepted at any
//     sequence, a known producer's new epoch only at sequence 0 (KIP-360: the
//     client restarts its sequences when it bumps the epoch). An older batch
//     that is not remembered is answered as a duplicate without offsets (-1)
//     only when every sequence from the first one the partition knows of in
//     that epoch up to the last was appended in order, which proves it
//     stored; below that first one it fails with ErrOutOfOrderSequence. (A
//     new epoch taken at sequence 2 after its first batch failed would make
//     that batch's retry look like an old duplicate, and acknowledged
//     records would be lost: hence sequence 0.) The state is rebuilt on open from the batches of the segments
//     written in the last ten minutes (at least the active segment and the
//     one before, at most 256 MiB of segments), so a retry after a crash and
//     restart is caught when the original is that recent; a client retries
//     for its delivery timeout, two minutes by default. (Kafka snapshots
//     producer state at each roll instead; that would lift the bound.)
//   - Pipelined producing (StartAppendVia): a producer's lock covers only
//     the sequence check and the start of its write; batches started and
//     not yet applied are pending in its state, in order, and the next
//     sequence follows the last pending one. A retry of a pending batch
//     waits for the original's outcome; a failed batch drops itself and the
//     producer's later pending batches (so the state is what was applied);
//     a new leadership term forgets another term's pending batches. In a
//     cluster, Observe (called as Raft applies each batch on every replica)
//     turns pending batches into remembered ones, and a restored Raft
//     snapshot rebuilds the state from the log (RebuildProducers).
package partition
