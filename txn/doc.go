// Package txn is the transaction coordinator of Kafka's transactions
// (KIP-98): for each transactional id, the producer id and epoch it was
// given, the state of its current transaction, the partitions and groups
// in it, the offsets sent to it and its timeout; and the steps that move
// it (InitProducerID, AddPartitions, AddOffsets, CommitOffsets, End, and
// Tick's timeouts; for transaction version 2, KIP-890 part 2, AddPartition
// and EndBump: bump.go). docs/transactions.md says what a user gets.
//
// # States
//
//	Empty ──AddPartitions/AddOffsets──> Ongoing
//	Ongoing ──End(commit)──> PrepareCommit ──markers, offsets──> CompleteCommit
//	Ongoing ──End(abort), timeout, InitProducerID──> PrepareAbort ──markers──> CompleteAbort
//	Complete* ──AddPartitions/AddOffsets──> Ongoing
//
// Under transaction version 2 AddPartition (a partition leader's, for a
// produce) and CommitOffsets with add begin and extend a transaction too,
// and EndBump moves to Prepare* at the bumped epoch (from Empty or
// Complete* as well, for an abort with nothing to mark).
//
// # Invariants
//
//   - A record is written to the Store (durable, replicated in a cluster)
//     before the step it records is answered or acted on; memory changes
//     only once the write succeeded. A Prepare* record is the decision:
//     it is written before any marker, and whoever holds the record next
//     (Tick, a new coordinator) finishes it the same way.
//   - Only the current epoch of a producer id acts: every other epoch is
//     fenced (ErrProducerFenced). InitProducerID bumps the epoch (a new
//     producer id when it would overflow) after ending what the previous
//     epoch left open, so a zombie can neither end nor extend it; EndBump
//     bumps it with each end, so nothing of the ended transaction's epoch
//     joins the next one.
//   - Offsets sent to a transaction reach the group's committed offsets
//     (Writer.CommitOffsets) only after its commit markers are written;
//     an abort drops them.
//   - Each transactional id's steps run one at a time (its entry's lock,
//     held across the store and marker writes); different ids in
//     parallel.
//
// The package knows no partition, Raft group or wire format: the Store
// and Writer it is given (package broker's) do the writes.
package txn
