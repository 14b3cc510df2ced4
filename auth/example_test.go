package auth_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/xdg-go/scram"

	"github.com/logd/logd/auth"
)

// A Kafka front-end's SaslAuthenticate loop, with the library's client
// playing the Kafka client.
func ExampleAuthenticator_Start() {
	store := auth.NewMemoryCredentialStore()
	creds, _ := auth.NewCredentials("s3cret", auth.DefaultIterations) // logd user create alice
	_ = store.Put("alice", creds)
	authn, _ := auth.NewAuthenticator(store, auth.AuthenticatorConfig{})

	client, _ := scram.SHA512.NewClient("alice", "s3cret", "")
	conv := client.NewConversation()

	x, _ := authn.Start(auth.ScramSHA512, false) // the mechanism from SaslHandshake
	msg, _ := conv.Step("")
	for !x.Done() {
		resp, err := x.Step(context.Background(), []byte(msg)) // one SaslAuthenticate
		if err != nil {
			fmt.Println("SASL_AUTHENTICATION_FAILED:", err) // then close the connection
			return
		}
		msg, _ = conv.Step(string(resp))
	}
	p, _ := x.Principal()
	fmt.Println(p)
	// Output: User:alice
}

// The core's check before a produce, and how a front-end reads a refusal.
func ExampleAuthorizer_Authorize() {
	acls := auth.NewMemoryACLStore()
	_ = acls.Add(auth.ACL{ // logd acl add --principal User:alice --operation write --topic orders- --prefix
		Principal: auth.User("alice"), Permission: auth.Allow, Operation: auth.OpWrite,
		ResourceType: auth.ResourceTopic, PatternType: auth.PatternPrefixed, Name: "orders-",
	})
	authz, _ := auth.NewAuthorizer(auth.AuthorizerConfig{
		Mode: auth.AuthzOn, ACLs: acls,
		Audit: auth.NewDenialAudit(slog.New(slog.DiscardHandler), 0, 0), // the server passes its logger
	})

	// A front-end, after authenticating the connection:
	ctx := auth.NewContext(context.Background(), auth.Identity{Principal: auth.User("alice"), Addr: "10.0.0.7:51234"})

	fmt.Println(authz.AuthorizeContext(ctx, auth.OpWrite, auth.Topic("orders-eu")))
	fmt.Println(authz.AuthorizeContext(ctx, auth.OpDescribe, auth.Topic("orders-eu"))) // write implies describe
	err := authz.AuthorizeContext(ctx, auth.OpRead, auth.Topic("orders-eu"))
	var denied *auth.DeniedError
	if errors.As(err, &denied) && denied.Resource.Type == auth.ResourceTopic {
		fmt.Println("TOPIC_AUTHORIZATION_FAILED:", err)
	}
	// Output:
	// <nil>
	// <nil>
	// TOPIC_AUTHORIZATION_FAILED: auth: User:alice may not read topic "orders-eu" (ask an administrator for an ACL: logd acl add)
}
