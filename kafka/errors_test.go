package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/logd/logd/auth"
)

// denial is a refusal as the core returns it: a *auth.DeniedError wrapped
// with broker.ErrDenied, so both errors.Is and errors.As see it.
func denial(r auth.Resource) error {
	d := &auth.DeniedError{Principal: auth.User("mallory"), Operation: auth.OpRead, Resource: r}
	return fmt.Errorf("%w: %w", ErrDenied, d)
}

func TestDenialsMapToTheResourcesAuthorizationCode(t *testing.T) {
	topicDenied, groupDenied, clusterDenied := denial(auth.Topic("orders")), denial(auth.Group("billing")), denial(auth.Cluster())
	bare := fmt.Errorf("produce: %w", ErrDenied) // a refusal that names no resource
	for _, tc := range []struct {
		name string
		code int16
		want *kerr.Error
	}{
		{"errorCode topic", errorCode(topicDenied), kerr.TopicAuthorizationFailed},
		{"errorCode group", errorCode(groupDenied), kerr.GroupAuthorizationFailed},
		{"errorCode cluster", errorCode(clusterDenied), kerr.ClusterAuthorizationFailed},
		{"errorCode bare", errorCode(bare), kerr.ClusterAuthorizationFailed},
		{"errorCode auth.DeniedError alone", errorCode(&auth.DeniedError{Resource: auth.Group("g")}), kerr.GroupAuthorizationFailed},
		// The resource the core names wins over the request's kind: an
		// offset commit refused on its topic is a topic refusal.
		{"groupCode topic", groupCode(topicDenied), kerr.TopicAuthorizationFailed},
		{"groupCode group", groupCode(groupDenied), kerr.GroupAuthorizationFailed},
		{"groupCode bare", groupCode(bare), kerr.GroupAuthorizationFailed},
		{"topicCode topic", topicCode(topicDenied), kerr.TopicAuthorizationFailed},
		{"topicCode bare", topicCode(bare), kerr.TopicAuthorizationFailed},
		{"adminCode cluster", adminCode(clusterDenied), kerr.ClusterAuthorizationFailed},
		{"adminCode topic", adminCode(topicDenied), kerr.TopicAuthorizationFailed},
		{"produceCode topic", produceCode(topicDenied, nil), kerr.TopicAuthorizationFailed},
		{"deniedCode cluster bare", deniedCode(bare, "cluster"), kerr.ClusterAuthorizationFailed},
		// Not a denial: mapped as before.
		{"topicCode unknown topic", topicCode(ErrUnknownTopic), kerr.UnknownTopicOrPartition},
		{"groupCode unknown topic", groupCode(ErrUnknownTopic), kerr.UnknownTopicOrPartition},
	} {
		if tc.code != tc.want.Code {
			t.Errorf("%s: code %d (%s), want %s", tc.name, tc.code, kerr.ErrorForCode(tc.code), tc.want.Message)
		}
	}
}
