package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
)

// The record of a server-assigned group (consumer.go): its group epoch,
// target, and each member's id, epochs, subscription, assignment and what
// it is revoking, written where the classic groups' state is (the
// control plane's group-state record of the group's name: a single
// node's DB, synced; in a cluster the metadata group's group_state
// command), so the next coordinator takes the group over: after a
// metadata election, or when a node that runs alone restarts. A group id
// is a classic group or a server-assigned one, never both at once, so
// they share the record's key; the record's first byte tells them apart
// (groups' encoding starts with its version, 1).
//
// A group is recorded before a heartbeat answer tells a member anything
// recorded (its epoch, its assignment): a member that learnt an epoch
// finds it at the next coordinator. A heartbeat that changes nothing
// writes nothing. What is not recorded: when each member was last heard
// of (sessions restart at the takeover) and when a revocation is due
// (its rebalance timeout restarts too).

// consumerRecordTag is a server-assigned group's record's first byte,
// followed by the JSON of consumerRecord.
const consumerRecordTag = 0xc8

type consumerRecord struct {
	Group       string                 `json:"group"`
	Epoch       int32                  `json:"epoch"`
	TargetEpoch int32                  `json:"target_epoch"`
	Assignor    string                 `json:"assignor,omitempty"`
	TopicsSeen  string                 `json:"topics_seen,omitempty"`
	Members     []consumerMemberRecord `json:"members"`
}

type consumerMemberRecord struct {
	ID                 string           `json:"id"`
	Instance           string           `json:"instance,omitempty"`
	Rack               string           `json:"rack,omitempty"`
	ClientID           string           `json:"client_id,omitempty"`
	ClientHost         string           `json:"client_host,omitempty"`
	Principal          string           `json:"principal,omitempty"`
	Epoch              int32            `json:"epoch"`
	PrevEpoch          int32            `json:"prev_epoch"`
	Topics             []string         `json:"topics,omitempty"`
	Regex              string           `json:"regex,omitempty"`
	Assignor           string           `json:"assignor,omitempty"`
	RebalanceTimeoutMs int64            `json:"rebalance_timeout_ms"`
	Assigned           []topicPartsJSON `json:"assigned,omitempty"`
	Revoking           []topicPartsJSON `json:"revoking,omitempty"`
	Target             []topicPartsJSON `json:"target,omitempty"`
	Left               bool             `json:"left,omitempty"`
}

type topicPartsJSON struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// isConsumerRecord reports whether a group-state record is a
// server-assigned group's.
func isConsumerRecord(enc []byte) bool { return len(enc) > 0 && enc[0] == consumerRecordTag }

func partsJSON(s tpSet) []topicPartsJSON {
	var out []topicPartsJSON
	for _, x := range s.sorted() {
		if n := len(out); n > 0 && out[n-1].Topic == x.topic {
			out[n-1].Partitions = append(out[n-1].Partitions, x.p)
			continue
		}
		out = append(out, topicPartsJSON{Topic: x.topic, Partitions: []int32{x.p}})
	}
	return out
}

func partsSet(ts []topicPartsJSON) tpSet {
	out := tpSet{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			out[tp{t.Topic, p}] = true
		}
	}
	return out
}

// encodeLocked is g's record. Runs with the groups' lock held.
func (g *cgroup) encodeLocked() []byte {
	rec := consumerRecord{Group: g.name, Epoch: g.epoch, TargetEpoch: g.targetEpoch, Assignor: g.assignor,
		TopicsSeen: g.topicsSeen, Members: []consumerMemberRecord{}}
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		rec.Members = append(rec.Members, consumerMemberRecord{ID: m.id, Instance: m.instance, Rack: m.rack,
			ClientID: m.clientID, ClientHost: m.clientHost, Principal: string(m.principal), Epoch: m.epoch, PrevEpoch: m.prevEpoch,
			Topics: m.topics, Regex: m.regex, Assignor: m.assignor,
			RebalanceTimeoutMs: m.rebalanceTimeout.Milliseconds(), Assigned: partsJSON(m.assigned),
			Revoking: partsJSON(m.revoking), Target: partsJSON(g.target[id]), Left: m.left})
	}
	js, _ := json.Marshal(rec) // strings, numbers, booleans and slices of them always marshal
	return append([]byte{consumerRecordTag}, js...)
}

// decodeConsumerRecord is the group a record describes, as a coordinator
// takes it over at now: each member's session (and a revocation's
// deadline) starts then.
func decodeConsumerRecord(name string, enc []byte, now time.Time) (*cgroup, error) {
	if !isConsumerRecord(enc) {
		return nil, fmt.Errorf("the record of consumer group %q does not start with %#x", name, consumerRecordTag)
	}
	var rec consumerRecord
	if err := json.Unmarshal(enc[1:], &rec); err != nil {
		return nil, fmt.Errorf("the record of consumer group %q: %w", name, err)
	}
	if rec.Group != name || rec.Epoch < 0 || rec.TargetEpoch < 0 || rec.TargetEpoch > rec.Epoch {
		return nil, fmt.Errorf("the record of consumer group %q names group %q at epoch %d, target epoch %d", name, rec.Group, rec.Epoch, rec.TargetEpoch)
	}
	g := newCGroup(name)
	g.epoch, g.targetEpoch, g.assignor, g.topicsSeen = rec.Epoch, rec.TargetEpoch, rec.Assignor, rec.TopicsSeen
	for _, r := range rec.Members {
		if r.ID == "" || g.members[r.ID] != nil || r.Epoch < 0 || r.Epoch > rec.Epoch {
			return nil, fmt.Errorf("the record of consumer group %q has member %q at epoch %d (group epoch %d), or twice", name, r.ID, r.Epoch, rec.Epoch)
		}
		m := &cmember{id: r.ID, instance: r.Instance, rack: r.Rack, clientID: r.ClientID, clientHost: r.ClientHost,
			principal: Principal(r.Principal), epoch: r.Epoch, prevEpoch: r.PrevEpoch, topics: r.Topics, assignor: r.Assignor, seen: now, left: r.Left,
			rebalanceTimeout: time.Duration(r.RebalanceTimeoutMs) * time.Millisecond, assigned: partsSet(r.Assigned), revoking: partsSet(r.Revoking)}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = ConsumerSessionTimeout
		}
		if r.Regex != "" {
			if _, err := regexp.Compile(r.Regex); err != nil {
				return nil, fmt.Errorf("the record of consumer group %q: member %q's regex: %w", name, r.ID, err)
			}
			m.setRegex(r.Regex)
		}
		if len(m.revoking) > 0 {
			m.revokeBy = now.Add(m.rebalanceTimeout)
		}
		g.members[m.id] = m
		g.target[m.id] = partsSet(r.Target)
	}
	return g, nil
}

// consumerWrite is a group's record to write: enc (nil: remove the
// record, the group has no member) covers its changes up to upto.
type consumerWrite struct {
	need  bool
	upto  uint64
	epoch int32
	enc   []byte
}

// pendingLocked is the write g needs, if any. Runs with the groups' lock
// held.
func (g *cgroup) pendingLocked() consumerWrite {
	if g.changes == g.recorded {
		return consumerWrite{}
	}
	w := consumerWrite{need: true, upto: g.changes, epoch: g.epoch}
	if len(g.members) > 0 {
		w.enc = g.encodeLocked()
		if len(w.enc) > groups.MaxStateBytes {
			w.enc = nil // too large to record: its members join again after a coordinator move
		}
	}
	return w
}

// recordConsumerGroup writes w, unless a later write of g covered it
// meanwhile. A node that no longer leads the metadata answers
// *NotLeaderError (the member finds the next coordinator); another
// failure is kind.ErrUnavailable (the member retries; the next heartbeat
// of the group writes again).
func (b *Broker) recordConsumerGroup(ctx context.Context, g *cgroup, w consumerWrite) error {
	if !w.need {
		return nil
	}
	g.saving.Lock()
	defer g.saving.Unlock()
	s := &b.consumers
	s.mu.Lock()
	done := g.recorded >= w.upto
	s.mu.Unlock()
	if done {
		return nil
	}
	err := b.keepEmptiedEpoch(ctx, g.name, w)
	if err == nil {
		err = b.plane.recordConsumerState(ctx, g.name, w.epoch, w.enc)
	}
	if err != nil {
		var nl *NotLeaderError
		if errors.As(err, &nl) {
			return err
		}
		b.logger.Warn("could not record a consumer group; its members' heartbeats retry", "group", g.name, "err", err)
		return kind.Errorf(kind.ErrUnavailable, "record consumer group %q: %v", g.name, err)
	}
	s.mu.Lock()
	g.recorded = max(g.recorded, w.upto)
	s.writes++
	s.mu.Unlock()
	return nil
}

// keepEmptiedEpoch records the group epoch of a group whose record w
// removes (it has no member, or its record is too large) as the group's
// generation, where the classic groups record theirs, before the record
// goes: a coordinator that creates the group again (this one after a
// restart, the next metadata leader) starts above it, as Kafka keeps an
// empty group's epoch. A generation recorded already at or above it (a
// classic group's, an earlier emptying's) is left.
func (b *Broker) keepEmptiedEpoch(ctx context.Context, group string, w consumerWrite) error {
	if w.enc != nil || w.epoch <= 0 {
		return nil
	}
	err := b.plane.recordGeneration(ctx, group, w.epoch)
	if errors.Is(err, offsets.ErrGenerationTaken) {
		return nil
	}
	return err
}

// takeOver replaces the node's groups with those recorded (by group
// name; a record of a classic group is left out), for a new coordinator.
// A record that does not decode is logged and left: its members join
// again.
func (b *Broker) takeOverConsumerGroups(recorded map[string][]byte) {
	now := time.Now()
	gs := map[string]*cgroup{}
	for _, name := range slices.Sorted(maps.Keys(recorded)) {
		enc := recorded[name]
		if !isConsumerRecord(enc) {
			continue
		}
		g, err := decodeConsumerRecord(name, enc, now)
		if err != nil {
			b.logger.Warn("a consumer group's record is not taken over: its members join it again", "group", name, "err", err)
			continue
		}
		gs[name] = g
	}
	s := &b.consumers
	s.mu.Lock()
	s.groups = gs
	s.mu.Unlock()
}

// sweepConsumerGroups removes the members whose session ended (as a
// heartbeat of their group would) and records every group with changes
// not yet recorded: a group whose members all stopped is removed from the
// record too.
func (b *Broker) sweepConsumerGroups(ctx context.Context) {
	s := &b.consumers
	now := time.Now()
	type pending struct {
		g *cgroup
		w consumerWrite
	}
	var ws []pending
	s.mu.Lock()
	for _, g := range s.groups {
		b.expireLocked(g, now)
		if w := g.pendingLocked(); w.need {
			ws = append(ws, pending{g, w})
		}
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, restoreTimeout)
	defer cancel()
	for _, p := range ws {
		if err := b.recordConsumerGroup(ctx, p.g, p.w); err != nil {
			return // not leading any more, or failing: the next sweep tries again
		}
	}
}

// recordConsumerState on a node that runs alone: the group's state record
// in its DB (synced).
func (l *localPlane) recordConsumerState(_ context.Context, group string, _ int32, enc []byte) error {
	return l.offsets.SaveGroupState(group, enc)
}

// recordConsumerState in a cluster: the group's group_state command of
// the metadata group, its group epoch as the record's generation (a
// record of an older epoch is refused there).
func (r *raftPlane) recordConsumerState(ctx context.Context, group string, epoch int32, enc []byte) error {
	return r.cl.RecordGroupState(ctx, group, epoch, enc)
}
