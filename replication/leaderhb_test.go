package replication

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A leader's heartbeat interval (HeartbeatTimeout/10 to /5 of the leader
// configuration) is at most a third of the shortest follower timeout
// (HeartbeatTimeout of the follower configuration) and of the lease,
// and both configurations pass Raft's validation.
func TestLeaderConfigHeartbeatsWithinHalfTheFollowerTimeoutAndLease(t *testing.T) {
	for _, c := range []struct{ hb, lease time.Duration }{
		{time.Second, time.Second},
		{time.Second, 500 * time.Millisecond},
		{1500 * time.Millisecond, time.Second},
		{50 * time.Millisecond, 50 * time.Millisecond},
	} {
		rc := raft.DefaultConfig()
		rc.LocalID = "n1"
		rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = c.hb, c.hb, c.lease
		follower, leader := roleConfigs(rc)
		if follower.HeartbeatTimeout != c.hb || follower.ElectionTimeout != c.hb ||
			leader.TrailingLogs != rc.TrailingLogs || leader.SnapshotInterval != rc.SnapshotInterval || leader.SnapshotThreshold != rc.SnapshotThreshold {
			t.Errorf("%+v: follower %+v leader %+v: only the leader's timeouts may differ", c, follower, leader)
		}
		if maxInterval := leader.HeartbeatTimeout / 5; maxInterval > c.hb/3 || maxInterval > c.lease/3 {
			t.Errorf("%+v: leader heartbeats up to every %v: more than a third of the follower timeout or the lease", c, maxInterval)
		}
		if leader.HeartbeatTimeout <= c.hb && c.lease == c.hb {
			t.Errorf("%+v: leader HeartbeatTimeout %v is not longer than the follower's", c, leader.HeartbeatTimeout)
		}
		for _, r := range []raft.ReloadableConfig{follower, leader} {
			if err := raft.ValidateConfig(ptr(applyReloadable(*rc, r))); err != nil {
				t.Errorf("%+v: %+v: %v", c, r, err)
			}
		}
	}
}

func applyReloadable(c raft.Config, r raft.ReloadableConfig) raft.Config {
	c.TrailingLogs, c.SnapshotInterval, c.SnapshotThreshold = r.TrailingLogs, r.SnapshotInterval, r.SnapshotThreshold
	c.HeartbeatTimeout, c.ElectionTimeout = r.HeartbeatTimeout, r.ElectionTimeout
	return c
}

func ptr[T any](v T) *T { return &v }
