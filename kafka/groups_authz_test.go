package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// A DescribeGroups of several groups authorizes each: the group the
// principal may not describe is refused, the next one it may describe is
// answered (a group no member holds: Dead, no error).
func TestDescribeGroupsAuthorizesEachGroup(t *testing.T) {
	ss := startSecure(t, secureOpts{mode: auth.AuthRequired, core: aclCore{newFakeCore()}})
	mcl := newClient(t, ss.s.Addr().String(), kgo.SASL(scramAuth(auth.ScramSHA512, "mallory", "m4llory")))
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{"g", "open"}
	resp, err := req.RequestWith(testCtx(t), mcl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, g := range resp.Groups {
		codes[g.Group] = g.ErrorCode
	}
	if codes["g"] != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("g: code %d, want GROUP_AUTHORIZATION_FAILED", codes["g"])
	}
	if c, ok := codes["open"]; !ok || c != 0 {
		t.Errorf("open: code %d (answered: %v), want no error", c, ok)
	}
}
