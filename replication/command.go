package replication

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/log"
)

// A partition group's Raft command entries are record batches, and one
// more command: move the log start (Kafka's DeleteRecords). Raft's Apply
// only makes LogCommand entries, so the command is told from a batch by
// the byte where a batch has its magic (always 2: the batch was validated
// before it entered Raft):
//
//	delete records command (26 bytes)
//	     0   16 zero
//	    16    1 magic      101 (a batch: 2)
//	    17    1 type       1: move the log start
//	    18    8 offset     the new log start offset, big-endian
//
//	sleep marker (18 bytes): the group goes to sleep (sleep.go); applying
//	it changes nothing
//	     0   16 zero
//	    16    1 magic      101
//	    17    1 type       2
//
//	share state: a share group's state of the partition (sharestate.go)
//
// The log stores each as an entry of kind kindCommand (a logd Raft entry:
// it owns no offset) and gives it back to Raft as a LogCommand.
const (
	commandMagic      byte = 101
	commandDeleteRecs byte = 1
	commandSleep      byte = 2
	commandSize            = 26
	sleepSize              = 18
	// kindCommand is the log entry kind of a command that is not a batch,
	// well above 1 + any raft.LogType.
	kindCommand log.EntryKind = 64
)

// ErrBadCommand: a command entry that is neither a batch nor a command
// this version knows.
var ErrBadCommand = errors.New("replication: unknown command entry")

// isCommand reports whether a LogCommand's data is a logd command rather
// than a record batch.
func isCommand(b []byte) bool { return len(b) > 16 && b[16] == commandMagic }

// isSleep reports whether a LogCommand's data is a sleep marker.
func isSleep(b []byte) bool {
	return len(b) == sleepSize && b[16] == commandMagic && b[17] == commandSleep
}

func encodeSleep() []byte {
	b := make([]byte, sleepSize)
	b[16], b[17] = commandMagic, commandSleep
	return b
}

func encodeDeleteRecords(offset int64) []byte {
	b := make([]byte, commandSize)
	b[16], b[17] = commandMagic, commandDeleteRecs
	binary.BigEndian.PutUint64(b[18:], uint64(offset))
	return b
}

func decodeDeleteRecords(b []byte) (int64, error) {
	if len(b) != commandSize || b[16] != commandMagic || b[17] != commandDeleteRecs {
		return 0, fmt.Errorf("%w: %d bytes, type %d", ErrBadCommand, len(b), typeOf(b))
	}
	off := int64(binary.BigEndian.Uint64(b[18:]))
	if off < 0 {
		return 0, fmt.Errorf("%w: delete records to offset %d", ErrBadCommand, off)
	}
	return off, nil
}

func typeOf(b []byte) int {
	if len(b) > 17 {
		return int(b[17])
	}
	return -1
}

// entryKind maps a Raft entry to the log's entry kind: batches are
// KindBatch, logd commands kindCommand, every other type opaque (owning
// no offset).
func entryKind(l *raft.Log) log.EntryKind {
	if l.Type == raft.LogCommand {
		if isCommand(l.Data) {
			return kindCommand
		}
		return log.KindBatch
	}
	return log.EntryKind(1 + l.Type)
}

func logType(k log.EntryKind) raft.LogType {
	if k == log.KindBatch || k == kindCommand {
		return raft.LogCommand
	}
	return raft.LogType(k - 1)
}
