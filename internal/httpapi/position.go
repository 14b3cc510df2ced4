package httpapi

import (
	"fmt"
	"strconv"
	"strings"
)

// position is a live tail's place in its topic: for each partition of the
// stream, in partition order, the next offset to send. Its text form is the
// SSE event id: "P:N" pairs joined by commas, e.g. "0:42,1:17,2:9".
type position struct {
	parts []int32
	next  []int64
}

// maxPositionParts bounds how many partitions an event id may name.
const maxPositionParts = 1 << 16

// String is the event id.
func (p *position) String() string {
	var b strings.Builder
	b.Grow(len(p.parts) * 8)
	for i := range p.parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(int64(p.parts[i]), 10))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(p.next[i], 10))
	}
	return b.String()
}

// parsePosition reads an event id. Partitions must be distinct; the
// result is in partition order.
func parsePosition(s string) (map[int32]int64, error) {
	const want = `want the id of an event this stream sent: "P:N" pairs joined by commas, e.g. "0:42,1:17"`
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty event id: %s", want)
	}
	if strings.Count(s, ",") >= maxPositionParts {
		return nil, fmt.Errorf("event id names over %d partitions", maxPositionParts)
	}
	out := map[int32]int64{}
	for pair := range strings.SplitSeq(s, ",") {
		ps, ns, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if !ok {
			return nil, fmt.Errorf("event id part %q has no ':': %s", pair, want)
		}
		p, err1 := strconv.ParseInt(ps, 10, 32)
		n, err2 := strconv.ParseInt(ns, 10, 64)
		if err1 != nil || err2 != nil || p < 0 || n < 0 {
			return nil, fmt.Errorf("event id part %q: partition and offset must be whole numbers >= 0: %s", pair, want)
		}
		if _, dup := out[int32(p)]; dup {
			return nil, fmt.Errorf("event id names partition %d twice: %s", p, want)
		}
		out[int32(p)] = n
	}
	return out, nil
}
