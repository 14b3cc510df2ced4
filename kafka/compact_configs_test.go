package kafka

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// cleanup.policy and the compaction settings: set at create, shown by
// DescribeConfigs with their Kafka types and sources, changed by
// IncrementalAlterConfigs, returned to the default by DELETE, and bad
// values refused with INVALID_CONFIG.
func TestCompactionConfigsWithKadm(t *testing.T) {
	n := startNode(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, n.addr))
	res, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"cleanup.policy": kmsg.StringPtr("compact"), "delete.retention.ms": kmsg.StringPtr("1000"),
		"min.cleanable.dirty.ratio": kmsg.StringPtr("0.25"),
	}, "kv")
	if err != nil || res.Err != nil {
		t.Fatalf("create compacted topic: %v %v", err, res.Err)
	}
	got := topicConfigValues(t, adm, "kv")
	for name, want := range map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "1000",
		"min.cleanable.dirty.ratio": "0.25", "min.compaction.lag.ms": "0", "max.compaction.lag.ms": "9223372036854775807"} {
		if c := got[name]; c.MaybeValue() != want {
			t.Errorf("%s = %q, want %q", name, c.MaybeValue(), want)
		}
	}
	if c := got["cleanup.policy"]; c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("cleanup.policy source %v, want DYNAMIC_TOPIC_CONFIG", c.Source)
	}
	if c := got["max.compaction.lag.ms"]; c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("max.compaction.lag.ms source %v, want DEFAULT_CONFIG", c.Source)
	}
	if c := coreConfig(t, n, "kv").Cleanups(); c.Policy != broker.CleanupCompact || c.DeleteRetentionMs != 1000 {
		t.Fatalf("core config %+v", c)
	}
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("delete, compact")},
		{Op: kadm.DeleteConfig, Name: "delete.retention.ms"},
	}, "kv")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, rs)
	}
	if c := coreConfig(t, n, "kv").Cleanups(); c.Policy != broker.CleanupCompactDelete || c.DeleteRetentionMs != broker.DefaultCleanup().DeleteRetentionMs {
		t.Fatalf("after alter: %+v", c)
	}
	for name, v := range map[string]string{"cleanup.policy": "shred", "min.cleanable.dirty.ratio": "1.5", "min.compaction.lag.ms": "-1"} {
		rs, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kmsg.StringPtr(v)}}, "kv")
		if !errors.Is(rs[0].Err, kerr.InvalidConfig) || !strings.Contains(rs[0].ErrMessage, strings.Split(name, ".")[0]) {
			t.Errorf("%s=%s: %+v, want INVALID_CONFIG naming it", name, v, rs)
		}
	}
}
