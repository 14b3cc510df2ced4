package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
)

// A join of logd's own consumer protocol, where the coordinator assigns
// (groups.JoinRequest.ServerAssign): one call joins and returns the
// member's assignment, so a member needs no leader-side assignor. The
// gRPC Groups service's JoinGroup is this call.

// defaultSessionTimeout is a member's session timeout when it names none
// (the coordinator's default, Kafka's session.timeout.ms).
const defaultSessionTimeout = 10 * time.Second

// AssignedJoin is a member's join of a group the coordinator assigns.
type AssignedJoin struct {
	Group, MemberID, ClientID, ClientHost string
	// Topics are the topics the member reads: at least one.
	Topics []string
	// Owned are the partitions the member held in OwnedGeneration (the
	// cooperative assignor keeps them where it can).
	Owned           []groups.TopicPartition
	OwnedGeneration int32
	// Assignors are the assignors the member accepts, by preference;
	// none: groups.DefaultAssignorName.
	Assignors []string
	// SessionTimeout 0 is defaultSessionTimeout.
	SessionTimeout, RebalanceTimeout time.Duration
}

// Assignment is a member's place in a generation: what JoinAssigned
// answers.
type Assignment struct {
	MemberID         string
	Generation       int32
	Assignor, Leader string
	Partitions       []groups.TopicPartition
	SessionTimeout   time.Duration
}

// JoinAssigned authorizes p to read the group, joins (or re-joins) the
// member and returns its assignment in the new generation. A generation
// replaced between the join and the sync (a member joined meanwhile) is
// joined again here, so a new member always learns its id. The wait for
// the other members ends when the broker shuts down.
func (b *Broker) JoinAssigned(ctx context.Context, p Principal, r AssignedJoin) (Assignment, error) {
	m, err := b.GroupMember(ctx, p, r.Group)
	if err != nil {
		return Assignment{}, err
	}
	jr, err := b.joinRequest(ctx, p, r)
	if err != nil {
		return Assignment{}, err
	}
	ctx, cancel := b.withShutdown(ctx)
	defer cancel()
	for {
		res, err := m.Join(ctx, jr)
		if err != nil {
			return Assignment{}, err
		}
		jr.MemberID = res.MemberID
		sr, err := m.Sync(ctx, groups.SyncRequest{Group: jr.Group, MemberID: res.MemberID, Generation: res.Generation})
		if errors.Is(err, groups.ErrRebalanceInProgress) || errors.Is(err, groups.ErrIllegalGeneration) {
			continue
		}
		if err != nil {
			return Assignment{}, err
		}
		tps, err := groups.DecodeAssignment(sr.Assignment)
		if err != nil {
			return Assignment{}, fmt.Errorf("join group %q: %w", jr.Group, err)
		}
		return Assignment{MemberID: res.MemberID, Generation: res.Generation, Assignor: res.Protocol,
			Leader: res.Leader, Partitions: tps, SessionTimeout: jr.SessionTimeout}, nil
	}
}

// withShutdown is ctx, also ended when the broker starts shutting down: a
// join waiting for other members must not hold up shutdown.
func (b *Broker) withShutdown(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-b.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// joinRequest checks r and turns it into the coordinator's request.
func (b *Broker) joinRequest(ctx context.Context, p Principal, r AssignedJoin) (groups.JoinRequest, error) {
	switch {
	case r.Group == "":
		return groups.JoinRequest{}, kind.Errorf(kind.ErrInvalidArgument, "join group: the group name is empty")
	case len(r.Topics) == 0:
		return groups.JoinRequest{}, kind.Errorf(kind.ErrInvalidArgument, "join group %q: name at least one topic to read", r.Group)
	case r.SessionTimeout < 0 || r.RebalanceTimeout < 0:
		return groups.JoinRequest{}, kind.Errorf(kind.ErrInvalidArgument, "join group %q: timeouts must not be negative", r.Group)
	}
	if err := b.checkJoinTopics(ctx, p, r); err != nil {
		return groups.JoinRequest{}, err
	}
	sub := groups.Subscription{Topics: r.Topics, Owned: r.Owned, Generation: r.OwnedGeneration}
	if len(sub.Owned) == 0 && sub.Generation == 0 {
		sub.Generation = -1
	}
	meta := groups.EncodeSubscription(sub)
	assignors := r.Assignors
	if len(assignors) == 0 {
		assignors = []string{groups.DefaultAssignorName}
	}
	jr := groups.JoinRequest{
		Group: r.Group, MemberID: r.MemberID, ClientID: r.ClientID, ClientHost: r.ClientHost,
		SessionTimeout: r.SessionTimeout, RebalanceTimeout: r.RebalanceTimeout,
		ProtocolType: groups.ConsumerProtocolType, ServerAssign: true,
	}
	for _, a := range assignors {
		jr.Protocols = append(jr.Protocols, groups.Protocol{Name: groups.AssignorName(a), Metadata: meta})
	}
	if jr.SessionTimeout == 0 {
		jr.SessionTimeout = defaultSessionTimeout
	}
	return jr, nil
}

// checkJoinTopics checks the topics a join names. On the coordinator a
// topic just created may still be being set up (ErrUnavailable: the
// client retries). A topic that does not exist is subscribed to with no
// partitions (the coordinator rebalances when it appears, as when a
// subscribed topic is deleted), unless a new member names no topic that
// exists: then the join fails with ErrUnknownTopic, as a misspelt name
// should.
func (b *Broker) checkJoinTopics(ctx context.Context, p Principal, r AssignedJoin) error {
	var missing error
	found := false
	for _, t := range r.Topics {
		_, err := b.PartitionCount(ctx, p, t)
		switch {
		case err == nil:
			found = true
		case errors.Is(err, ErrUnknownTopic):
			missing = err
		default:
			return err
		}
	}
	if !found && r.MemberID == "" {
		return missing
	}
	return nil
}
