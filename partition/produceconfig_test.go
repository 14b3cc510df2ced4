package partition

import (
	"encoding/json"
	"errors"
	"testing"
)

// A config stored before the produce settings existed loads with their
// defaults; set ones survive a JSON round trip; Validate names a bad one.
func TestProduceConfigDefaultsAndValidate(t *testing.T) {
	var old TopicConfig
	if err := json.Unmarshal([]byte(`{"name":"t","partitions":1,"replicas":1,"retention_ms":1,"retention_bytes":-1,"retention_records":-1,"segment_bytes":4096,"segment_ms":1000}`), &old); err != nil {
		t.Fatal(err)
	}
	if p := old.Produces(); p.MaxMessageBytes != 0 || p.TimestampType != TimestampCreateTime || p.MinInsyncReplicas != 1 || p.LogAppendTime() {
		t.Fatalf("old config's produce settings: %+v", p)
	}
	max, ts, isr := int64(2000), " LogAppendTime", int32(2)
	c := DefaultConfig("t").Apply(ConfigChange{MaxMessageBytes: &max, TimestampType: &ts, MinInsyncReplicas: &isr})
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c)
	var back TopicConfig
	if err := json.Unmarshal(b, &back); err != nil || back != c || !back.Produces().LogAppendTime() {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	for _, bad := range []ConfigChange{
		{TimestampType: new("Now")},
		{MinInsyncReplicas: new(int32(-1))},
		{MaxMessageBytes: new(int64(-5))},
	} {
		if err := DefaultConfig("t").Apply(bad).Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v, want ErrInvalidConfig", bad, err)
		}
	}
}
