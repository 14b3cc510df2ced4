package routing

import (
	"errors"
	"fmt"
)

// ErrInvalidTopicName is wrapped by ValidateTopicName's errors.
var ErrInvalidTopicName = errors.New("invalid topic name")

// Murmur2 is Kafka's murmur2 hash (org.apache.kafka.common.utils.Utils.murmur2),
// so that a key lands on the partition a Kafka client would choose.
func Murmur2(data []byte) int32 {
	const (
		seed = uint32(0x9747b28c)
		m    = uint32(0x5bd1e995)
		r    = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// ForKey returns the partition of a keyed record among n partitions: Kafka's
// toPositive(murmur2(key)) % n. Client and server both route through it.
// Records without a key are not routed here (round-robin or sticky).
func ForKey(key []byte, n int) int32 {
	return int32(int(Murmur2(key)&0x7fffffff) % n)
}

// validTopicName reports whether name matches [A-Za-z0-9._-]{1,249}. It
// runs on every request that names a topic, so it is a loop, not a regexp.
func validTopicName(name string) bool {
	if len(name) < 1 || len(name) > 249 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ValidateTopicName checks a topic name against [A-Za-z0-9._-]{1,249}.
// Errors wrap ErrInvalidTopicName and quote at most the name's first 64
// bytes.
func ValidateTopicName(name string) error {
	if !validTopicName(name) || name == "." || name == ".." {
		shown := name
		if len(shown) > 64 {
			shown = shown[:64] + "..."
		}
		return fmt.Errorf("%w %q (%d bytes): use 1 to 249 characters of A-Z a-z 0-9 . _ -", ErrInvalidTopicName, shown, len(name))
	}
	return nil
}
