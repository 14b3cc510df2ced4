package kafka

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// topicConfigValues describes a topic's configs with kadm, by name.
func topicConfigValues(t *testing.T, adm *kadm.Client, topic string) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v %s", topic, err, rc.Err, rc.ErrMessage)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}

func coreConfig(t *testing.T, n *testNode, topic string) broker.TopicConfig {
	t.Helper()
	cs, err := n.core.TopicConfigs(testCtx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := findTopic(cs, topic)
	if !ok {
		t.Fatalf("the core has no topic %s", topic)
	}
	return c
}

// DescribeConfigs, IncrementalAlterConfigs and AlterConfigs read and change
// a topic's retention and segment settings in the core, with kadm.
func TestTopicConfigsWithKadm(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "cfg", 1)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, n.addr))

	got := topicConfigValues(t, adm, "cfg")
	def := broker.DefaultConfig("cfg")
	if c := got["retention.ms"]; c.MaybeValue() != strconv.FormatInt(def.RetentionMs, 10) || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("retention.ms before any change: %+v", c)
	}
	for _, name := range []string{"retention.bytes", "retention.records", "segment.bytes", "segment.ms"} {
		if _, ok := got[name]; !ok {
			t.Fatalf("describe lacks %s: %v", name, got)
		}
	}

	// Incremental: set two, leave the rest.
	set := func(name, v string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: kmsg.StringPtr(v)}
	}
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "60000"), set("retention.records", "1000"), set("segment.bytes", "1048576")}, "cfg")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, rs)
	}
	c := coreConfig(t, n, "cfg")
	if c.RetentionMs != 60000 || c.RetentionRecords != 1000 || c.SegmentBytes != 1<<20 || c.RetentionBytes != def.RetentionBytes {
		t.Fatalf("core config after incremental alter: %+v", c)
	}
	got = topicConfigValues(t, adm, "cfg")
	if c := got["retention.records"]; c.MaybeValue() != "1000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.records after alter: %+v", c)
	}

	// DELETE returns one to its default.
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.records"}}, "cfg")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("delete config: %v %+v", err, rs)
	}
	if c := coreConfig(t, n, "cfg"); c.RetentionRecords != -1 || c.RetentionMs != 60000 {
		t.Fatalf("after DELETE retention.records: %+v", c)
	}

	// Validate-only changes nothing; a bad value is INVALID_CONFIG.
	rs, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.bytes", "5000")}, "cfg")
	if err != nil || rs[0].Err != nil || coreConfig(t, n, "cfg").RetentionBytes != -1 {
		t.Fatalf("validate-only: %v %+v, core %+v", err, rs, coreConfig(t, n, "cfg"))
	}
	rs, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("segment.bytes", "12")}, "cfg")
	if !errors.Is(rs[0].Err, kerr.InvalidConfig) {
		t.Fatalf("segment.bytes=12: %+v", rs)
	}

	// AlterConfigs (not incremental) replaces: what it does not name goes
	// back to its default.
	rs, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{set("retention.bytes", "1048576")}, "cfg")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter (replace): %v %+v", err, rs)
	}
	if c := coreConfig(t, n, "cfg"); c.RetentionBytes != 1<<20 || c.RetentionMs != def.RetentionMs || c.SegmentBytes != def.SegmentBytes {
		t.Fatalf("after AlterConfigs: %+v", c)
	}
}

// Unknown config names and other resources get clear errors; a broker
// describes the topic defaults, read-only.
func TestConfigErrorsAndBrokerConfigs(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "cfg", 1)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, n.addr))
	rs, _ := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: kmsg.StringPtr("true")}}, "cfg")
	if !errors.Is(rs[0].Err, kerr.InvalidConfig) || !strings.Contains(rs[0].ErrMessage, "unclean.leader.election.enable is not supported") {
		t.Fatalf("unknown config: %+v", rs)
	}
	rs, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "retention.ms", Value: kmsg.StringPtr("1")}}, "cfg")
	if !errors.Is(rs[0].Err, kerr.InvalidConfig) {
		t.Fatalf("APPEND: %+v", rs)
	}
	rs, _ = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("soon")}}, "cfg")
	if !errors.Is(rs[0].Err, kerr.InvalidConfig) || !strings.Contains(rs[0].ErrMessage, "not an integer") {
		t.Fatalf("non-integer: %+v", rs)
	}
	rs, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("1")}}, "nope")
	if !errors.Is(rs[0].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %+v", rs)
	}
	if c := coreConfig(t, n, "cfg"); c.RetentionMs != broker.DefaultConfig("cfg").RetentionMs {
		t.Fatalf("refused changes changed the topic: %+v", c)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "nope")
	if err == nil && (len(rcs) != 1 || !errors.Is(rcs[0].Err, kerr.UnknownTopicOrPartition)) {
		t.Fatalf("describe unknown topic: %+v", rcs)
	}

	brs, err := adm.DescribeBrokerConfigs(ctx, n.core.LocalNode().KafkaID)
	if err != nil || len(brs) != 1 || brs[0].Err != nil {
		t.Fatalf("describe broker: %v %+v", err, brs)
	}
	found := false
	for _, c := range brs[0].Configs {
		if c.Key == "log.retention.ms" && c.MaybeValue() == strconv.FormatInt(broker.DefaultConfig("").RetentionMs, 10) {
			found = true
		}
	}
	if !found {
		t.Fatalf("broker configs lack log.retention.ms: %+v", brs[0].Configs)
	}
	ars, _ := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: kmsg.StringPtr("1")}}, n.core.LocalNode().KafkaID)
	if len(ars) != 1 || !errors.Is(ars[0].Err, kerr.InvalidRequest) || !strings.Contains(ars[0].ErrMessage, "read-only") {
		t.Fatalf("alter broker configs: %+v", ars)
	}
}
