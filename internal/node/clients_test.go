package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// secured is --auth required, --authz on, User:admin a super user.
func secured(c *node.Config) {
	c.Auth = broker.AuthConfig{Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")}}
}

// passwordClient dials addr over TLS (trusting caFile) as user.
func passwordClient(t *testing.T, addr, caFile, user, password string) *client.Client {
	t.Helper()
	tc, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(addr, client.WithTLS(tc), client.WithCredentials(user, password), client.WithRetryTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
