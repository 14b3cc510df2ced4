package kafka

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// DescribeConfigs of a topic the principal may not describe is
// TOPIC_AUTHORIZATION_FAILED, whether the topic exists or not (as in
// Kafka: nothing tells a refused principal which topics exist); with
// describe granted it is answered, and a topic that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION for one who may describe it.
func TestDescribeConfigsRefusedPrincipal(t *testing.T) {
	b, addr, _ := startNodeIn(t, t.TempDir(), broker.AuthConfig{
		Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")},
	})
	ctx := testCtx(t)
	for user, pw := range map[string]string{"admin": "admin-pw", "eve": "eve-pw"} {
		if err := b.CreateUser(ctx, "User:admin", user, pw, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.CreateTopic(ctx, "User:admin", topicConfig("secret", 1)); err != nil {
		t.Fatal(err)
	}
	describe := func(adm *kadm.Client, topic string) error {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return err
		}
		rc, err := rcs.On(topic, nil)
		if err != nil {
			return err
		}
		return rc.Err
	}
	eve := kadm.NewClient(newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "eve", "eve-pw"))))
	admin := kadm.NewClient(newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA512, "admin", "admin-pw"))))
	for _, topic := range []string{"secret", "nosuch"} {
		if err := describe(eve, topic); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("eve describes the configs of %s: %v, want TOPIC_AUTHORIZATION_FAILED", topic, err)
		}
	}
	if err := describe(admin, "nosuch"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("admin describes the configs of nosuch: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	err := b.AddACLs(ctx, "User:admin", auth.ACL{Principal: auth.User("eve"), Permission: auth.Allow, Operation: auth.OpDescribe,
		ResourceType: auth.ResourceTopic, PatternType: auth.PatternLiteral, Name: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if err := describe(eve, "secret"); err != nil {
		t.Errorf("eve, granted describe, describes the configs of secret: %v", err)
	}
}
