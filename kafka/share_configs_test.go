package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// alterGroup sends IncrementalAlterConfigs of one GROUP resource and
// returns its code.
func alterGroup(t *testing.T, cl *kgo.Client, group string, validateOnly bool, kvs ...*string) int16 {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = *kvs[i], kvs[i+1], kmsg.IncrementalAlterConfigOpSet
		if kvs[i+1] == nil {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || len(resp.Resources) != 1 {
		t.Fatalf("incremental alter configs: %v %v", resp, err)
	}
	return resp.Resources[0].ErrorCode
}

func sp(s string) *string { return &s }

// A share group's configs are set through IncrementalAlterConfigs of
// resource type GROUP, as franz-go's own share tests set them: bad names
// and values are INVALID_CONFIG, validate-only stores nothing, a
// principal without alter on the group is refused, and the configs set
// take effect (earliest: the records produced before the group's first
// use are delivered; a delivery limit of 1: a released record is never
// delivered again).
func TestShareGroupConfigsByAlterConfigs(t *testing.T) {
	n := startShareNode(t, t.TempDir(), broker.Config{Auth: broker.AuthConfig{
		Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")},
	}})
	ctx := testCtx(t)
	for user, pw := range map[string]string{"admin": "admin-pw", "mallory": "mallory-pw"} {
		if err := n.b.CreateUser(ctx, "User:admin", user, pw, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.b.CreateTopic(ctx, "User:admin", topicConfig("q", 1)); err != nil {
		t.Fatal(err)
	}
	read := auth.ACL{Principal: auth.User("mallory"), Permission: auth.Allow, Operation: auth.OpRead, ResourceType: auth.ResourceGroup, PatternType: auth.PatternLiteral, Name: "g"}
	if err := n.b.AddACLs(ctx, "User:admin", read); err != nil {
		t.Fatal(err)
	}
	admin := newClient(t, n.addr, kgo.SASL(scramAuth(auth.ScramSHA256, "admin", "admin-pw")))
	mallory := newClient(t, n.addr, kgo.SASL(scramAuth(auth.ScramSHA256, "mallory", "mallory-pw")))
	produceValues(t, n.addr, "q", 0, 3, kgo.SASL(scramAuth(auth.ScramSHA256, "admin", "admin-pw")))

	if code := alterGroup(t, mallory, "g", false, sp("share.auto.offset.reset"), sp("earliest")); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("mallory (read on the group only): %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	for _, kv := range [][2]string{{"share.auto.offset.reset", "soonest"}, {"share.delivery.attempt.limit", "0"}, {"no.such.config", "1"}} {
		if code := alterGroup(t, admin, "g", false, sp(kv[0]), sp(kv[1])); code != kerr.InvalidConfig.Code {
			t.Fatalf("%s=%s: %v, want INVALID_CONFIG", kv[0], kv[1], kerr.ErrorForCode(code))
		}
	}
	if code := alterGroup(t, admin, "g", true, sp("share.auto.offset.reset"), sp("earliest")); code != 0 {
		t.Fatalf("validate only: %v", kerr.ErrorForCode(code))
	}
	if c := n.b.ShareGroupConfigOf("g"); c.AutoOffsetReset != "" {
		t.Fatalf("validate only stored %+v", c)
	}
	if code := alterGroup(t, admin, "g", false, sp("share.auto.offset.reset"), sp("earliest"),
		sp("share.delivery.attempt.limit"), sp("1"), sp("share.record.lock.duration.ms"), nil); code != 0 {
		t.Fatalf("set: %v", kerr.ErrorForCode(code))
	}

	cl := shareClient(t, n.addr, "q", "g", kgo.SASL(scramAuth(auth.ScramSHA256, "admin", "admin-pw")))
	seen := map[int64]int{}
	for len(seen) < 3 && ctx.Err() == nil {
		for _, r := range pollShare(t, cl) {
			seen[r.Offset]++
			if r.Offset == 0 {
				r.Ack(kgo.AckRelease) // the limit archives it
			} else {
				r.Ack(kgo.AckAccept)
			}
		}
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || seen[0] != 1 {
		t.Fatalf("deliveries by offset %v: want 0, 1 and 2, offset 0 once", seen)
	}
	d, err := n.b.DescribeShareGroup(ctx, "User:admin", "g")
	if err != nil || len(d.Partitions) != 1 || d.Partitions[0].Start != 3 {
		t.Fatalf("describe: %+v %v", d, err)
	}
	checkShareOffsets(t, admin, mallory)
	checkAlterShareOffsets(t, n.addr, admin, mallory, cl, kgo.SASL(scramAuth(auth.ScramSHA256, "admin", "admin-pw")))
}

// The redelivery backoff's configs are group configs too: SET stores
// them, a value out of range is INVALID_CONFIG, DELETE returns them to
// their defaults.
func TestShareBackoffConfigsByAlterConfigs(t *testing.T) {
	n := startShareNode(t, t.TempDir(), broker.Config{})
	cl := newClient(t, n.addr)
	if code := alterGroup(t, cl, "g", false, sp("share.redelivery.backoff.base.ms"), sp("250"),
		sp("share.redelivery.backoff.max.ms"), sp("8000")); code != 0 {
		t.Fatalf("set: %v", kerr.ErrorForCode(code))
	}
	if c := n.b.ShareGroupConfigOf("g"); c.BackoffBaseMs != 250 || c.BackoffMaxMs != 8000 {
		t.Fatalf("stored %+v", c)
	}
	for _, kv := range [][2]string{{"share.redelivery.backoff.base.ms", "-1"}, {"share.redelivery.backoff.max.ms", "0"}, {"share.redelivery.backoff.max.ms", "x"}} {
		if code := alterGroup(t, cl, "g", false, sp(kv[0]), sp(kv[1])); code != kerr.InvalidConfig.Code {
			t.Fatalf("%s=%s: %v, want INVALID_CONFIG", kv[0], kv[1], kerr.ErrorForCode(code))
		}
	}
	if code := alterGroup(t, cl, "g", false, sp("share.redelivery.backoff.base.ms"), nil, sp("share.redelivery.backoff.max.ms"), nil); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if c := n.b.ShareGroupConfigOf("g"); c.BackoffBaseMs != 0 || c.BackoffMaxMs != 0 {
		t.Fatalf("after delete %+v", c)
	}
}

// describeGroup is DescribeConfigs of group's GROUP resource (names nil:
// every config): each config's value and source, or the resource's error.
func describeGroup(t *testing.T, cl *kgo.Client, group string, names ...string) (map[string]kmsg.DescribeConfigsResponseResourceConfig, int16) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, names
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || len(resp.Resources) != 1 {
		t.Fatalf("DescribeConfigs: %+v %v", resp, err)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out, resp.Resources[0].ErrorCode
}

// DescribeConfigs of resource type GROUP answers a share group's configs
// in force, as franz-go's share tests read them back after setting them:
// the defaults first (DEFAULT_CONFIG), then what was set (GROUP_CONFIG),
// only the names asked for when some are; a principal without describe on
// the group is refused.
func TestShareGroupConfigsByDescribeConfigs(t *testing.T) {
	n := startShareNode(t, t.TempDir(), broker.Config{Auth: broker.AuthConfig{
		Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")},
	}})
	ctx := testCtx(t)
	for user, pw := range map[string]string{"admin": "admin-pw", "eve": "eve-pw"} {
		if err := n.b.CreateUser(ctx, "User:admin", user, pw, false); err != nil {
			t.Fatal(err)
		}
	}
	admin := newClient(t, n.addr, kgo.SASL(scramAuth(auth.ScramSHA256, "admin", "admin-pw")))
	eve := newClient(t, n.addr, kgo.SASL(scramAuth(auth.ScramSHA256, "eve", "eve-pw")))

	got, code := describeGroup(t, admin, "g")
	if code != 0 || len(got) != 8 {
		t.Fatalf("defaults: code %d, %d configs %v", code, len(got), got)
	}
	for name, want := range map[string]string{"share.auto.offset.reset": "latest", "share.record.lock.duration.ms": "30000",
		"share.delivery.attempt.limit": "5", "share.dlq.enable": "true", "share.key.ordering": "false"} {
		if c := got[name]; c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("default %s: %v (source %v), want %s from DEFAULT_CONFIG", name, c.Value, c.Source, want)
		}
	}
	if code := alterGroup(t, admin, "g", false, sp("share.auto.offset.reset"), sp("earliest"), sp("share.key.ordering"), sp("true")); code != 0 {
		t.Fatalf("set: %v", kerr.ErrorForCode(code))
	}
	got, code = describeGroup(t, admin, "g", "share.auto.offset.reset", "share.key.ordering", "share.delivery.attempt.limit")
	if code != 0 || len(got) != 3 {
		t.Fatalf("after set: code %d, %v", code, got)
	}
	for name, want := range map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{"share.auto.offset.reset": {"earliest", kmsg.ConfigSourceGroupConfig}, "share.key.ordering": {"true", kmsg.ConfigSourceGroupConfig},
		"share.delivery.attempt.limit": {"5", kmsg.ConfigSourceDefaultConfig}} {
		if c := got[name]; c.Value == nil || *c.Value != want.value || c.Source != want.source {
			t.Errorf("%s: %v (source %v), want %s from %v", name, c.Value, c.Source, want.value, want.source)
		}
	}
	if got, code := describeGroup(t, eve, "g"); code != kerr.GroupAuthorizationFailed.Code || len(got) != 0 {
		t.Fatalf("eve (no ACL on the group): code %v, %d configs, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code), len(got))
	}
}
