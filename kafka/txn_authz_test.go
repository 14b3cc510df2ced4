package kafka

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// A principal that may write a topic but not use a transactional id is
// refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED and writes nothing;
// granted write on the id (a transactional-id ACL), its transaction
// commits.
func TestTransactionalIDRefusedPrincipal(t *testing.T) {
	b, addr, _ := startNodeIn(t, t.TempDir(), broker.AuthConfig{
		Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")},
	})
	ctx := testCtx(t)
	if err := b.CreateUser(ctx, "User:admin", "eve", "eve-pw", false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic(ctx, "User:admin", topicConfig("txn", 2)); err != nil {
		t.Fatal(err)
	}
	allow := func(op auth.Operation, rt auth.ResourceType, name string) {
		t.Helper()
		err := b.AddACLs(ctx, "User:admin", auth.ACL{Principal: auth.User("eve"), Permission: auth.Allow, Operation: op,
			ResourceType: rt, PatternType: auth.PatternLiteral, Name: name})
		if err != nil {
			t.Fatal(err)
		}
	}
	allow(auth.OpWrite, auth.ResourceTopic, "txn")
	allow(auth.OpDescribe, auth.ResourceTopic, "txn")
	eve := txnProducer(t, addr, "eve-txn", kgo.SASL(scramAuth(auth.ScramSHA256, "eve", "eve-pw")))
	err := eve.BeginTransaction()
	if err == nil {
		err = eve.ProduceSync(ctx, &kgo.Record{Topic: "txn", Value: []byte("refused")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("eve's transaction: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	if end, _, err := b.ListOffset(ctx, "User:admin", "txn", 0, broker.Latest); err != nil || end != 0 {
		t.Fatalf("after the refused transaction partition 0 ends at %d (%v), want 0", end, err)
	}

	allow(auth.OpWrite, auth.ResourceTransactionalID, "eve-txn")
	allow(auth.OpDescribe, auth.ResourceTransactionalID, "eve-txn")
	granted := txnProducer(t, addr, "eve-txn", kgo.SASL(scramAuth(auth.ScramSHA256, "eve", "eve-pw")))
	produceTxn(t, granted, "txn", true, "granted")
}
