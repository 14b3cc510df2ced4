package replication

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/replication/raftrpc"
)

// Sleeping replicas. An idle hashicorp/raft group still costs
// its leader a heartbeat to every follower every few hundred milliseconds,
// and a Raft leader cannot go quiet without being deposed: its lease and
// its followers' election timers both expect the heartbeats. So an idle
// group does not slow down, it stops: every replica shuts its Raft
// instance down, keeping its log, its state and its place on the node's
// raftrpc.Hub, and starts a new one when the group is used again.
//
// Safety: sleeping is a restart. A replica's term, vote and log are durable
// before Raft acts on them (the same stores a kill -9 leaves behind), so a
// replica that stops its Raft and starts it again is, to the group, a
// replica that crashed and restarted, which Raft tolerates at any moment.
// No schedule of sleeps and wakes can lose a committed entry; a bad one can
// only cost an election.
//
// Liveness is the protocol's business, and it is this:
//
//   - Hibernate, on the leader, replicates a sleep marker (a logd command
//     entry that changes nothing, command.go), and once it is committed,
//     with no entry after it, and every reachable voter holds it (or F
//     has passed), the leader sleeps.
//   - A follower that stores a marker as its last entry sleeps once it has
//     heard from no leader for half its HeartbeatTimeout (F/2) with the
//     marker still last. An awake leader heartbeats at least every F/3
//     (heartbeat.go), so a follower goes F/2 without contact only when the
//     leader stopped: it slept, died or was cut off. The follower's own
//     election timer waits at least F: it sleeps before it would campaign.
//   - Any RPC for a sleeping replica wakes it (raftrpc.Transport.Sleep): a
//     peer that is awake wants the group, and Raft retries the RPC. A
//     replica woken by a peer does not campaign; the peer's election or
//     appends carry on.
//   - A use (a produce, a fetch) wakes the replica where it arrives:
//     Wake(true) starts Raft and makes it stand for election at once (a
//     TimeoutNow to itself, as a leadership transfer does), so the group has
//     a leader after one round of votes rather than an election timeout,
//     waking the other replicas with its RequestVote.
//
// A replica started by the node (OpenReplica) is awake; the node puts it
// back to sleep at once when its log ends with a marker (SleepIfMarked),
// or, with hibernation on, whenever it has a log (SleepOpened).
//
// While asleep, the Replica answers from the record of the moment it fell
// asleep (SleepRecord): Raft's methods would answer from a shut-down
// instance. Writes fail with ErrAsleep: the caller wakes the group (Wake)
// and waits for a leader, as after any leader loss.

// ErrAsleep: the replica's Raft is stopped (Sleep); Wake starts it.
var ErrAsleep = errors.New("replication: the partition replica is asleep")

// SleepRecord is what a sleeping replica knew of its group when it fell
// asleep.
type SleepRecord struct {
	At         time.Time
	Term       uint64
	LeaderID   raft.ServerID // empty when it knew none
	LeaderAddr raft.ServerAddress
	WasLeader  bool
}

// SleepCounts counts sleeps and wakes (a node's replicas', for metrics).
type SleepCounts struct {
	Sleeps, Wakes atomic.Int64
}

// sleepState is a Replica's sleep bookkeeping.
type sleepState struct {
	// mu orders Sleep, Wake and Close; it is never taken in Raft's
	// goroutines (a Sleep holding it waits for them to end).
	mu     sync.Mutex
	asleep atomic.Bool
	closed bool
	rec    atomic.Pointer[SleepRecord]
	sleeps atomic.Int64
	wakes  atomic.Int64
	// gate orders appends (Start, read-locked from its check of asleep to
	// its Apply) and falling asleep (write-locked); starts counts the
	// appends started, so that a Hibernate sees any since its marker.
	gate   sync.RWMutex
	starts atomic.Int64
	// used is when the replica was last used (Touch) or woke, woke when it
	// last woke, in Unix nanoseconds.
	used, woke atomic.Int64

	// timer runs a follower's marker check (markerStored); guarded by
	// timerMu, which StoreLogs takes, so never held while waiting for Raft.
	timerMu   sync.Mutex
	timer     *time.Timer
	timerStop bool
}

// raftTransport is the group's Transport as handed to Raft: without
// Close, which Raft's shutdown calls, since the Transport outlives a
// sleeping Raft instance (Replica.Close closes it).
type raftTransport struct{ *raftrpc.Transport }

// Close leaves the Transport open for the next Raft instance.
func (raftTransport) Close() error { return nil }

// Asleep reports whether the replica's Raft is stopped.
func (p *Replica) Asleep() bool { return p.sleep.asleep.Load() }

// Slept returns the record of the replica's last sleep, if it is asleep.
func (p *Replica) Slept() (SleepRecord, bool) {
	if !p.Asleep() {
		return SleepRecord{}, false
	}
	if r := p.sleep.rec.Load(); r != nil {
		return *r, true
	}
	return SleepRecord{}, false
}

// SleepCounts returns how many times the replica fell asleep and woke.
func (p *Replica) SleepCounts() (sleeps, wakes int64) {
	return p.sleep.sleeps.Load(), p.sleep.wakes.Load()
}

// Touch records a use of the replica (a request it serves) for Idle.
func (p *Replica) Touch() { p.sleep.used.Store(time.Now().UnixNano()) }

// UsedSinceWake reports whether the replica was used (Touch) after it
// last woke.
func (p *Replica) UsedSinceWake() bool { return p.sleep.used.Load() > p.sleep.woke.Load() }

// Woke returns when the replica last woke (the zero time if it never did).
func (p *Replica) Woke() time.Time {
	if w := p.sleep.woke.Load(); w != 0 {
		return time.Unix(0, w)
	}
	return time.Time{}
}

// Idle returns how long ago the replica was last used (Touch), woke, or
// stored a log entry (any write, barrier or configuration change, led or
// followed).
func (p *Replica) Idle() time.Duration {
	last := max(p.sleep.used.Load(), p.store.lastStore.Load())
	return time.Since(time.Unix(0, last))
}

// Hibernate puts an idle group to sleep; called on its leader. It
// replicates a sleep marker and, once the marker is committed with no
// entry after it and its reachable followers hold it (awaitMarker), stops
// this replica's Raft (the followers follow, see above). It returns false,
// and the group stays awake, when this replica does not lead, the marker
// could not be committed within timeout, or anything was appended after
// it, or the replica was used (Touch) while the marker was on its way: a
// request it serves would find it asleep.
func (p *Replica) Hibernate(timeout time.Duration) (bool, error) {
	in := p.inst()
	r := in.Raft
	if p.Asleep() || r.State() != raft.Leader {
		return false, nil
	}
	// An append started before the marker is stored before it, and so
	// applied before the marker's future answers; one started after it
	// changes starts.
	starts, used, term := p.sleep.starts.Load(), p.sleep.used.Load(), r.CurrentTerm()
	f := r.Apply(encodeSleep(), timeout)
	if err := in.await(f); err != nil {
		return false, p.applyError(err)
	}
	p.awaitMarker(r, term, f.Index())
	p.sleep.mu.Lock()
	defer p.sleep.mu.Unlock()
	if p.sleep.closed || p.inst() != in {
		return false, nil
	}
	p.sleep.gate.Lock()
	if p.sleep.starts.Load() != starts || p.sleep.used.Load() != used || r.State() != raft.Leader || r.LastIndex() != f.Index() {
		p.sleep.gate.Unlock()
		return false, nil
	}
	p.sleep.asleep.Store(true)
	p.sleep.gate.Unlock()
	return true, p.sleepLocked(in)
}

// awaitMarker waits, for at most a follower's HeartbeatTimeout F, until
// every other voter of the group that answered an append of this leader
// within F holds the sleep marker at index (appended in term). A commit
// needs a majority only: a follower left behind (a slow link, a loaded
// node) would miss the marker and, not sleeping, campaign once the
// leader fell silent, and its RequestVotes would wake the whole group for
// nothing; the torture saw more sleeps than wakes. A voter that did not
// answer within F is down or cut off, and is not waited for.
func (p *Replica) awaitMarker(r *raft.Raft, term, index uint64) {
	f := r.GetConfiguration()
	if f.Error() != nil {
		return
	}
	wait := p.followerCfg.HeartbeatTimeout
	deadline := time.Now().Add(wait)
	for {
		behind := false
		for _, s := range f.Configuration().Servers {
			if s.ID == p.rc.LocalID || s.Suffrage != raft.Voter {
				continue
			}
			a := p.trans.Acked(s.ID)
			if (a.Term != term || a.Index < index) && time.Since(a.At) < wait {
				behind = true
				break
			}
		}
		if !behind || time.Now().After(deadline) || r.State() != raft.Leader {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Sleep stops the replica's Raft now, whatever its role. It is a no-op
// for a replica that is asleep or closed.
func (p *Replica) Sleep() error {
	p.sleep.mu.Lock()
	defer p.sleep.mu.Unlock()
	if p.sleep.closed || p.Asleep() {
		return nil
	}
	return p.sleepLocked(p.inst())
}

// sleepLocked stops in, which is the running instance; sleep.mu is held.
//
// It takes a snapshot first (a few bytes: the log is the state, fsm.go)
// when the replica's log is more than sleepSnapshotAfter entries past its
// last one. Waking starts a Raft instance, which reads every entry after
// the replica's last snapshot (hashicorp/raft's NewRaft scans them for
// configuration changes, and re-applies them once it learns the commit
// index), and partitions snapshot on their own only every 8,192 entries:
// waking a replica of 2,000 entries took 40 ms on a quiet machine (1 ms
// after a snapshot), and seconds on a loaded one, where a list offsets
// over 200 partitions that woke them took 7-18 s, longer than its client
// waits.
func (p *Replica) sleepLocked(in *instance) error {
	r := in.Raft
	if r.LastIndex() > p.snaps.last.Load()+sleepSnapshotAfter {
		if err := r.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			p.logger.Debug("snapshot before sleeping", "err", err)
		}
	}
	addr, id := r.LeaderWithID()
	rec := &SleepRecord{At: time.Now(), Term: r.CurrentTerm(), LeaderID: id, LeaderAddr: addr, WasLeader: r.State() == raft.Leader}
	p.sleep.rec.Store(rec)
	p.sleep.gate.Lock()
	p.sleep.asleep.Store(true)
	p.sleep.gate.Unlock()
	// From now on an RPC for the group wakes it (after this Sleep).
	p.trans.Sleep(func() { go p.wakeForPeer() })
	err := in.shutdown()
	// The instance is down whether or not its shutdown reported an error.
	p.stopRole()
	if err != nil {
		return fmt.Errorf("replication: %s: sleep: %w", p.group, err)
	}
	p.leaderHB.Store(false)
	p.sleep.sleeps.Add(1)
	p.counts.Sleeps.Add(1)
	p.logger.Debug("asleep", "term", rec.Term, "leader", rec.LeaderID, "was-leader", rec.WasLeader)
	return nil
}

// sleepSnapshotAfter is how many entries past its last snapshot a replica
// may sleep without taking one: a wake reads them (sleepLocked), about
// 5 ms for 256 on a quiet machine; a snapshot costs a few files and an
// fsync, which a group that slept since its last few entries need not pay.
const sleepSnapshotAfter = 256

// Wake starts the replica's Raft again, if it is asleep; with campaign, it
// stands for election at once. Waking a replica that is awake is a no-op.
func (p *Replica) Wake(campaign bool) error {
	p.sleep.mu.Lock()
	defer p.sleep.mu.Unlock()
	if p.sleep.closed {
		return fmt.Errorf("replication: %s: wake: %w", p.group, raft.ErrRaftShutdown)
	}
	if !p.Asleep() {
		return nil
	}
	rc := p.rc
	// The state machine is the log, which is as it was: restoring the
	// snapshot would replace it. Raft re-applies the entries after the
	// snapshot, which is harmless (PartitionFSM.Apply).
	rc.NoSnapshotRestoreOnStart = true
	r, err := newRaft(&rc, p.fsm, p.store, p.stable, p.snaps, raftTransport{p.trans})
	if err != nil {
		return fmt.Errorf("replication: %s: wake: %w", p.group, err)
	}
	p.run(r)
	p.startRole()
	p.Touch()
	p.sleep.woke.Store(time.Now().UnixNano())
	p.sleep.asleep.Store(false)
	p.trans.Wake()
	p.sleep.wakes.Add(1)
	p.counts.Wakes.Add(1)
	p.logger.Debug("awake", "campaign", campaign)
	if campaign {
		p.trans.Campaign(p.rc.LocalID)
	}
	return nil
}

// SleepIfMarked puts a replica just opened back to sleep when its log ends
// with a sleep marker: its group was asleep when the node stopped, and a
// restart that wakes every idle group (an election each) would cost a
// node with thousands of them minutes. It knows no leader then (Slept's
// LeaderID is empty). A group that is awake elsewhere wakes it with its
// next RPC. It reports whether the replica sleeps.
func (p *Replica) SleepIfMarked() (bool, error) {
	p.sleep.mu.Lock()
	defer p.sleep.mu.Unlock()
	in := p.inst()
	if p.sleep.closed || p.Asleep() || in.State() == raft.Leader || !p.lastIsMarker() {
		return p.Asleep(), nil
	}
	return true, p.sleepLocked(in)
}

// SleepOpened puts a replica just opened with a log (its node restarted)
// to sleep, marked or not, unless it already leads. Its node cannot know
// whether the group fell asleep on the other replicas while it was down:
// a replica that stopped while its group was awake, and started again
// after the others slept, would otherwise stand for election once its
// follower timeout passed and wake them all for nothing (an election per
// such group at every restart). Asleep, it costs the group nothing: an
// awake leader's next heartbeat, or a candidate's RequestVote, wakes it
// (any RPC does), and a group asleep everywhere wakes at its next use,
// as one whose replicas all restarted. It reports whether the replica
// sleeps.
func (p *Replica) SleepOpened() (bool, error) {
	p.sleep.mu.Lock()
	defer p.sleep.mu.Unlock()
	in := p.inst()
	if p.sleep.closed || p.Asleep() || in.State() == raft.Leader || p.log.LastIndex() == 0 {
		return p.Asleep(), nil
	}
	return true, p.sleepLocked(in)
}

// wakeForPeer wakes the replica for an RPC a peer sent it.
func (p *Replica) wakeForPeer() {
	if err := p.Wake(false); err != nil && !errors.Is(err, raft.ErrRaftShutdown) {
		p.logger.Warn("waking for a peer's RPC failed", "error", err)
	}
}

// markerStored is the log store's hook: a sleep marker was stored as the
// last entry at index. A follower checks F/2 later whether to sleep.
func (p *Replica) markerStored(uint64) {
	p.sleep.timerMu.Lock()
	defer p.sleep.timerMu.Unlock()
	if p.sleep.timerStop {
		return
	}
	d := p.followerCfg.HeartbeatTimeout / 2
	if p.sleep.timer == nil {
		p.sleep.timer = time.AfterFunc(d, p.checkMarker)
		return
	}
	p.sleep.timer.Reset(d)
}

// checkMarker puts a follower to sleep whose last entry is a sleep marker
// and which has heard from no leader for F/2; while one is heard, it looks
// again when F/2 will have passed since.
func (p *Replica) checkMarker() {
	p.sleep.mu.Lock()
	defer p.sleep.mu.Unlock()
	in := p.inst()
	if p.sleep.closed || p.Asleep() || in.State() == raft.Leader || !p.lastIsMarker() {
		return
	}
	quiet := p.followerCfg.HeartbeatTimeout / 2
	if since := time.Since(in.LastContact()); since < quiet {
		p.sleep.timerMu.Lock()
		if !p.sleep.timerStop {
			p.sleep.timer.Reset(quiet - since)
		}
		p.sleep.timerMu.Unlock()
		return
	}
	if err := p.sleepLocked(in); err != nil {
		p.logger.Warn("sleep after a marker failed", "error", err)
	}
}

// lastIsMarker reports whether the log's last entry is a sleep marker.
func (p *Replica) lastIsMarker() bool {
	var l raft.Log
	if err := p.store.GetLog(p.log.LastIndex(), &l); err != nil {
		return false
	}
	return l.Type == raft.LogCommand && isSleep(l.Data)
}

// stopTimers stops the marker check for Close.
func (p *Replica) stopTimers() {
	p.sleep.timerMu.Lock()
	defer p.sleep.timerMu.Unlock()
	p.sleep.timerStop = true
	if p.sleep.timer != nil {
		p.sleep.timer.Stop()
	}
}
