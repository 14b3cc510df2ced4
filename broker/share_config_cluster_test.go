package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// A share group's configuration is the cluster's: changes made on nodes
// that do not lead the metadata are passed on to the leader, each applies
// to the configuration the leader holds (two changes of different configs
// on two nodes both stay), and every node serves the result; a principal
// without alter on the group changes nothing.
func TestShareGroupConfigIsTheCluster(t *testing.T) {
	admin := auth.User("admin")
	pr := broker.Principal(admin.String())
	nodes := threeNodes(t, admin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	everyNode := func(what string, want broker.ShareGroupConfig) {
		t.Helper()
		waitFor(t, what, func() bool {
			for _, b := range nodes {
				if b.ShareGroupConfigOf("g") != want {
					return false
				}
			}
			return true
		})
	}
	if err := nodes["n2"].SetShareGroupConfig(ctx, pr, "g", map[string]string{"share.delivery.attempt.limit": "3"}); err != nil {
		t.Fatal(err)
	}
	if err := nodes["n3"].SetShareGroupConfig(ctx, pr, "g", map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		t.Fatal(err)
	}
	everyNode("every node has both changes", broker.ShareGroupConfig{AutoOffsetReset: "earliest", DeliveryLimit: 3})

	bob := broker.Principal(auth.User("bob").String())
	if err := nodes["n2"].SetShareGroupConfig(ctx, bob, "g", map[string]string{"share.delivery.attempt.limit": "7"}); !errors.Is(err, broker.ErrDenied) {
		t.Fatalf("a change by a principal without alter on the group: %v, want denied", err)
	}
	if err := nodes["n3"].AlterShareGroupConfig(ctx, pr, "g", map[string]*string{"share.delivery.attempt.limit": nil}, false); err != nil {
		t.Fatal(err)
	}
	everyNode("every node has the limit back at its default", broker.ShareGroupConfig{AutoOffsetReset: "earliest"})
}
