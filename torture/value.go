package torture

import (
	"fmt"
	"strconv"
	"strings"
)

// Value is what a workload record carries: who produced it, under which key,
// and the producer's sequence number for that key. Its encoding is unique
// per record, so a record read back names the produce operation it came
// from.
type Value struct {
	Producer int
	Key      string
	Seq      int64
}

// KeyName is the key producer p uses for its k-th key. Keys are owned by one
// producer, so a key's order is its producer's sequence order.
func KeyName(p, k int) string { return fmt.Sprintf("p%d-k%d", p, k) }

// String encodes v as "producer/key/seq".
func (v Value) String() string { return fmt.Sprintf("%d/%s/%d", v.Producer, v.Key, v.Seq) }

// ParseValue decodes a String encoding.
func ParseValue(s string) (Value, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return Value{}, fmt.Errorf("torture: value %q is not producer/key/seq", s)
	}
	p, err := strconv.Atoi(parts[0])
	if err != nil {
		return Value{}, fmt.Errorf("torture: value %q: producer: %w", s, err)
	}
	seq, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return Value{}, fmt.Errorf("torture: value %q: seq: %w", s, err)
	}
	return Value{Producer: p, Key: parts[1], Seq: seq}, nil
}
