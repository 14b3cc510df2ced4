package replication

import (
	"time"

	"github.com/hashicorp/raft"
)

// Idle cost of a partition group. An idle hashicorp/raft leader
// sends each follower two streams of empty AppendEntries RPCs:
//
//   - heartbeats, every HeartbeatTimeout/10 to /5, so that the follower,
//     which starts an election after HeartbeatTimeout to 2 × HeartbeatTimeout
//     without hearing from a leader, does not;
//   - commit notices, every CommitTimeout to 2 × CommitTimeout, so that
//     followers learn the commit index once appends stop.
//
// With the defaults (1 s, 50 ms) that is about 20 RPCs a second per
// follower per group, and at a few hundred groups per node the idle CPU is
// spent on nothing else (encoding, yamux frames, syscalls, timers).
//
// Partitions cut both, without changing what a follower tolerates:
//
//   - The leader's heartbeat interval is decoupled from the follower
//     timeout. hashicorp/raft reads both from HeartbeatTimeout (the leader
//     heartbeats every HeartbeatTimeout/10 to /5; a follower waits
//     HeartbeatTimeout to 2 ×), and ReloadConfig can change it at run time,
//     so a replica runs with the follower value F while it follows and with
//     leaderHeartbeatTimeout(F, L) = 5/3 × min(F, L) while it leads (Raft's
//     NotifyCh tells it when it gains or loses the leadership; Raft wants
//     ElectionTimeout >= HeartbeatTimeout, so the leader's ElectionTimeout
//     goes up with it, which only delays giving up a leadership transfer
//     whose target does not take over). The leader
//     then heartbeats every min(F, L)/6 to min(F, L)/3: at most a third of
//     the shortest timeout any follower of the group waits (F) and a third
//     of its own lease (L, below), so neither a follower nor the lease check
//     sees a healthy leader go quiet unless it stalls for 2/3 of F. (With
//     the commit notices below slowed down, heartbeats alone refresh the
//     followers' contact; a third, not a half, leaves a margin for a
//     loaded machine.) The bound holds whatever the followers do,
//     since no replica's follower timeout ever changes: a leader slowing
//     down needs no handshake with them. The only window is a replica that
//     has just lost the leadership and still has the long value for up to
//     one reload: it notices a dead new leader later than F, never sooner.
//   - CommitTimeout is 1 s unless the caller's Raft configuration sets it:
//     it only bounds how late followers learn the last commit after appends
//     stop (Raft's own comment: it is not the heartbeat). logd serves
//     nothing from a follower's state machine; a follower's applied index
//     (logd_raft_follower_lag_entries) trails the leader's by the last
//     batch for up to 2 s after a burst.
//   - LeaderLeaseTimeout is HeartbeatTimeout unless the caller's Raft
//     configuration sets it. A leader hearing from no quorum within it steps
//     down; the commit notices at 50 ms used to refresh that contact, now
//     only the heartbeats do, at most every min(F, L)/3. A longer lease only
//     delays the step-down of a leader cut off from its quorum, whose writes
//     cannot commit anyway: logd's reads are proven by barriers
//     (ReadIndex), never by the lease.
//
// Failover is unchanged: a follower still starts an election after F to 2F
// of silence.

// DefaultCommitTimeout is a group's CommitTimeout when the server gives
// no Raft configuration (RaftConfig).
const DefaultCommitTimeout = time.Second

// RaftConfig is the Raft configuration a group starts from: a copy of
// base, or when base is nil Raft's defaults with CommitTimeout
// DefaultCommitTimeout. Partitions and the metadata group both use it;
// each then sets what is its own.
func RaftConfig(base *raft.Config) *raft.Config {
	if base != nil {
		c := *base
		return &c
	}
	rc := raft.DefaultConfig()
	rc.CommitTimeout = DefaultCommitTimeout
	return rc
}

// leaderHeartbeatTimeout is the HeartbeatTimeout a leader runs with, for a
// group whose followers wait follower and whose lease is lease: the leader
// then heartbeats at most every min(follower, lease)/3.
func leaderHeartbeatTimeout(follower, lease time.Duration) time.Duration {
	return min(follower, lease) * 5 / 3
}

// roleConfigs returns the reloadable configuration of rc as a follower
// (rc's own) and as a leader (a longer HeartbeatTimeout, see above).
func roleConfigs(rc *raft.Config) (follower, leader raft.ReloadableConfig) {
	follower = raft.ReloadableConfig{
		TrailingLogs:      rc.TrailingLogs,
		SnapshotInterval:  rc.SnapshotInterval,
		SnapshotThreshold: rc.SnapshotThreshold,
		HeartbeatTimeout:  rc.HeartbeatTimeout,
		ElectionTimeout:   rc.ElectionTimeout,
	}
	leader = follower
	leader.HeartbeatTimeout = max(rc.LeaderLeaseTimeout, leaderHeartbeatTimeout(rc.HeartbeatTimeout, rc.LeaderLeaseTimeout))
	// Raft wants ElectionTimeout >= HeartbeatTimeout. A leader uses it only
	// to give up a leadership transfer whose target does not take over.
	leader.ElectionTimeout = max(rc.ElectionTimeout, leader.HeartbeatTimeout)
	return follower, leader
}

// roleWatch is a running followRole: closing stop ends it, and it closes
// done when it has.
type roleWatch struct{ stop, done chan struct{} }

// startRole starts the role watcher of the Raft instance just started
// (run), with sleep.mu held or before the replica is shared. A watcher
// runs only while an instance does: a sleeping replica keeps no goroutine
// (a node may hold thousands). Raft blocks on NotifyCh until it is read or it shuts down,
// so an instance must never run without one.
func (p *Replica) startRole() {
	w := &roleWatch{stop: make(chan struct{}), done: make(chan struct{})}
	p.role = w
	go p.followRole(w, p.followerCfg, p.leaderCfg)
}

// stopRole ends the role watcher, if one runs, once its instance has shut
// down (sleep.mu held). A notification Raft left unread (a leader's step
// down, sent as it shut down) is dropped: the next instance starts as a
// follower, with the follower configuration.
func (p *Replica) stopRole() {
	if p.role == nil {
		return
	}
	close(p.role.stop)
	<-p.role.done
	p.role = nil
	select {
	case <-p.notify:
	default:
	}
}

// followRole reloads the replica's configuration each time Raft reports
// (on p.notify) that it gained or lost the leadership, until w.stop is
// closed. It never takes sleep.mu, which stopRole holds while it waits.
func (p *Replica) followRole(w *roleWatch, follower, leader raft.ReloadableConfig) {
	defer close(w.done)
	for {
		select {
		case lead := <-p.notify:
			c := follower
			if lead {
				c = leader
			}
			if err := p.r().ReloadConfig(c); err != nil {
				p.logger.Warn("reload raft configuration", "leader", lead, "error", err)
			}
			p.leaderHB.Store(lead)
		case <-w.stop:
			return
		}
	}
}

// HeartbeatTimeout is the HeartbeatTimeout this replica's Raft runs with
// now: the follower value, or the longer leader one while it leads (see
// leaderHeartbeatTimeout). For tests and diagnostics.
func (p *Replica) HeartbeatTimeout() time.Duration {
	if p.leaderHB.Load() {
		return p.leaderCfg.HeartbeatTimeout
	}
	return p.followerCfg.HeartbeatTimeout
}
