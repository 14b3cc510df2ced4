package offsets

import (
	"encoding/binary"
	"fmt"
)

// keyPrefix is the start of every key this package owns in the shared DB.
const keyPrefix = "offsets/"

// prefixUpper is the first key after every key starting with keyPrefix.
var prefixUpper = prefixEnd([]byte(keyPrefix))

// Escape bytes of the string encoding (see doc.go).
const (
	escByte   = 0x00
	escZero   = 0xFF // 0x00 0xFF is a literal 0x00 byte
	escFinish = 0x01 // 0x00 0x01 ends the string
)

// appendString appends the order-preserving, prefix-free encoding of s.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == escByte {
			dst = append(dst, escByte, escZero)
			continue
		}
		dst = append(dst, s[i])
	}
	return append(dst, escByte, escFinish)
}

// readString decodes one string written by appendString from the front of
// b and returns it with the rest of b.
func readString(b []byte) (string, []byte, error) {
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] != escByte {
			continue
		}
		if i+1 >= len(b) {
			return "", nil, fmt.Errorf("string escape cut at byte %d", i)
		}
		switch b[i+1] {
		case escFinish:
			out = append(out, b[:i]...)
			return string(out), b[i+2:], nil
		case escZero:
			out = append(out, b[:i+1]...)
			b = b[i+2:]
			i = -1
		default:
			return "", nil, fmt.Errorf("bad string escape 0x00 0x%02x at byte %d", b[i+1], i)
		}
	}
	return "", nil, fmt.Errorf("string not terminated")
}

// groupPrefix is the key range of one group.
func groupPrefix(group string) []byte {
	return appendString([]byte(keyPrefix), group)
}

// topicPrefix is the key range of one group's topic.
func topicPrefix(group, topic string) []byte {
	return appendString(groupPrefix(group), topic)
}

// offsetKey is the key of one committed offset.
func offsetKey(group, topic string, partition int32) []byte {
	return binary.BigEndian.AppendUint32(topicPrefix(group, topic), uint32(partition))
}

// parseKey splits a key written by offsetKey.
func parseKey(key []byte) (group, topic string, partition int32, err error) {
	if len(key) < len(keyPrefix) || string(key[:len(keyPrefix)]) != keyPrefix {
		return "", "", 0, fmt.Errorf("%w: key %q lacks prefix %q", ErrCorrupt, key, keyPrefix)
	}
	rest := key[len(keyPrefix):]
	if group, rest, err = readString(rest); err != nil {
		return "", "", 0, fmt.Errorf("%w: key %q: group: %v", ErrCorrupt, key, err)
	}
	if topic, rest, err = readString(rest); err != nil {
		return "", "", 0, fmt.Errorf("%w: key %q: topic: %v", ErrCorrupt, key, err)
	}
	if len(rest) != 4 {
		return "", "", 0, fmt.Errorf("%w: key %q: partition takes %d bytes, want 4", ErrCorrupt, key, len(rest))
	}
	p := binary.BigEndian.Uint32(rest)
	if p > 1<<31-1 {
		return "", "", 0, fmt.Errorf("%w: key %q: partition %d out of range", ErrCorrupt, key, p)
	}
	return group, topic, int32(p), nil
}

// prefixEnd returns the first key greater than every key that starts with
// prefix, or nil when there is none (prefix is all 0xFF).
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
