// Package share owns the state of one share partition of a share group
// (Kafka's KIP-932): which records of a partition's log a share group has
// handed out, to whom, until when, how often, and which are done. It is
// pure: no I/O, no goroutines, no clock (every operation takes the time
// as Unix milliseconds). The broker holds one Partition per (group,
// topic, partition), serializes calls on it, and persists Encode's bytes
// before it answers (docs/share-groups.md).
//
// # The window
//
// A Partition covers the offsets [Start, End) of its log. Every offset
// below Start is done (accepted, archived, or below the log start); End is
// the first offset never acquired. Each offset in the window has a State
// and a delivery count. Acquire hands out Available offsets, lowest
// first, then new ones from End, never one at or past Start+MaxInFlight;
// Acknowledge applies a member's answers; a lock past its deadline is
// released by the next operation that looks (Expire is called by each).
// Whenever the offset at Start is done, Start moves up past every done
// offset and their entries are dropped.
//
// # Invariants
//
//   - Start and End never move back; Start <= End <= Start+MaxInFlight
//     (End may exceed it only when MaxInFlight shrank).
//   - A record's delivery count never exceeds DeliveryLimit: a record
//     released or expired at the limit is archived, not made available.
//   - Only the member holding a record's lock, before its deadline, may
//     acknowledge it. An acknowledgement is checked whole before any of it
//     applies: it changes nothing or all it names.
//   - Acknowledged and Archived are final. DeadLettering is never
//     acquired: it becomes Archived only by DeadLettered, after its
//     dead-letter append.
//   - With Config.KeyOrdering, a record is acquired only while no earlier
//     record of its key is Acquired or Available (ordering.go).
//
// # Encoding
//
// Encode writes the window as runs of offsets with the same state and
// delivery count:
//
//	byte    version (1; 2 once a record was dead-lettered; 3 while a
//	        record waiting for its dead-letter append has a reason)
//	varint  Start
//	uvarint End - Start
//	uvarint the next dead-letter sequence (versions 2 and 3)
//	uvarint number of runs
//	runs    uvarint length, byte state, uvarint delivery count,
//	        and for a DeadLettering run (versions 2 and 3) uvarint the
//	        first record's dead-letter sequence (the others follow it)
//	reasons (version 3 only) uvarint count, then per DeadLettering
//	        record with a reason, in offset order: uvarint its index
//	        (offset - Start), uvarint length, the reason's bytes (at
//	        most MaxReasonBytes; the first MaxStoredReasonBytes of
//	        reasons in all)
//
// Locks and redelivery backoffs are not encoded: Decode returns each
// Acquired record as Available (final when its count reached the limit:
// Archived, or DeadLettering with the next sequences in offset order when
// dead letters are on), because a lock does not survive the node that
// granted it. Records rejected or out of deliveries go to the group's
// dead-letter topic when Config.DeadLetter is on (deadletter.go). Decode refuses bytes that do not
// describe a window exactly (ErrCorrupt).
package share
