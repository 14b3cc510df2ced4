package kv

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errDamaged is a stored state or entry that does not decode; the
// partition's index is rebuilt.
var errDamaged = errors.New("kv: index damaged")

const (
	keyPrefix    = "kv/"
	valueVersion = 1
	valueLen     = 1 + 8 + 8
	stateTag     = 's'
	entryTag     = 'k'
)

// partPrefix is the prefix of every key of one partition's index.
func partPrefix(topic string, part int32) []byte {
	b := make([]byte, 0, len(keyPrefix)+len(topic)+1+4+1)
	b = append(b, keyPrefix...)
	b = append(b, topic...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint32(b, uint32(part))
}

func stateKey(prefix []byte) []byte {
	return append(append([]byte(nil), prefix...), stateTag)
}

func entriesPrefix(prefix []byte) []byte {
	return append(append([]byte(nil), prefix...), entryTag)
}

func entryKey(prefix, key []byte) []byte {
	b := make([]byte, 0, len(prefix)+1+len(key))
	b = append(b, prefix...)
	b = append(b, entryTag)
	return append(b, key...)
}

// prefixEnd is the first key after every key that starts with p (nil: no
// such key, p is all 0xFF).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// state is what the index knows of its partition.
type state struct {
	incarnation int64
	next        int64 // the next offset to read
}

func encodePair(a, b int64) []byte {
	v := make([]byte, valueLen)
	v[0] = valueVersion
	binary.BigEndian.PutUint64(v[1:], uint64(a))
	binary.BigEndian.PutUint64(v[9:], uint64(b))
	return v
}

func decodePair(what string, k, v []byte) (int64, int64, error) {
	if len(v) != valueLen || v[0] != valueVersion {
		return 0, 0, fmt.Errorf("%w: %s at key %q: %d bytes, version %d", errDamaged, what, k, len(v), firstByte(v))
	}
	return int64(binary.BigEndian.Uint64(v[1:])), int64(binary.BigEndian.Uint64(v[9:])), nil
}

func firstByte(v []byte) int {
	if len(v) == 0 {
		return -1
	}
	return int(v[0])
}
