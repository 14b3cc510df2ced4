package partition

import (
	"errors"
	"testing"
)

// TestConfigValidatesInWireUnits: limits are checked in the unit they
// arrive in (ms), so a value that would overflow a time.Duration is refused
// instead of wrapping around to a small one (issue 17 item 5: segment_ms
// 2^58+1 became 1 ms and passed "at least 1s").
func TestConfigValidatesInWireUnits(t *testing.T) {
	huge := int64(1<<58 + 1)
	maxMs := int64(1<<63-1) / 1e6
	for _, c := range []struct {
		name string
		ch   ConfigChange
		ok   bool
	}{
		{"segment_ms 2^58+1", ConfigChange{SegmentMs: &huge}, false},
		{"retention_ms 2^58+1", ConfigChange{RetentionMs: &huge}, false},
		{"segment_ms at the largest duration", ConfigChange{SegmentMs: &maxMs}, true},
		{"retention_ms at the largest duration", ConfigChange{RetentionMs: &maxMs}, true},
	} {
		err := DefaultConfig("t").Apply(c.ch).Validate()
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
