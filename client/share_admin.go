package client

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// ShareGroupDescription is a share group as its coordinator knows it.
type ShareGroupDescription struct {
	Group string
	// State is "Dead" (the coordinator does not know the group: no member
	// since it started), "Empty" or "Stable".
	State      string
	Epoch      int32
	Members    []ShareMember
	Partitions []SharePartitionState
}

// ShareMember is a member of a share group.
type ShareMember struct {
	MemberID, ClientID, ClientHost string
	MemberEpoch                    int32
	Topics                         []string // subscribed
}

// SharePartitionState is a share partition's window: every record below
// Start is done; InFlight records of [Start, End) are not yet, of which
// Available may be handed out and Acquired are locked by a member (the
// rest are being dead-lettered). Backlog is the records from Start (or
// the log start, when later) to the high watermark, what the group has
// still to acknowledge (records acknowledged out of order included);
// OldestAge how long ago the oldest record not acknowledged was appended
// (0 when there is none).
type SharePartitionState struct {
	Topic                         string
	Partition                     int32
	Start, End                    int64
	InFlight, Available, Acquired int32
	Backlog                       int64
	OldestAge                     time.Duration
}

// DescribeShareGroup describes a share group: its members and its share
// partitions (those of the topics its members subscribe to, or that the
// coordinator served), each read on its partition's leader. It needs
// DESCRIBE on the group, and a partition DESCRIBE on its topic.
func (a *Admin) DescribeShareGroup(ctx context.Context, group string) (ShareGroupDescription, error) {
	var resp *logdv1.ShareDescribeResponse
	err := a.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = logdv1.NewShareClient(cc).Describe(ctx, &logdv1.ShareDescribeRequest{Group: group})
		return err
	})
	if err != nil {
		return ShareGroupDescription{}, fmt.Errorf("describe share group %q: %w", group, err)
	}
	d := ShareGroupDescription{Group: resp.Group, State: resp.State, Epoch: resp.Epoch}
	for _, m := range resp.Members {
		d.Members = append(d.Members, ShareMember{MemberID: m.MemberId, ClientID: m.ClientId, ClientHost: m.ClientHost,
			MemberEpoch: m.MemberEpoch, Topics: m.Topics})
	}
	for _, p := range resp.Partitions {
		d.Partitions = append(d.Partitions, SharePartitionState{Topic: p.Topic, Partition: p.Partition, Start: p.Start, End: p.End,
			InFlight: p.InFlight, Available: p.Available, Acquired: p.Acquired,
			Backlog: p.Backlog, OldestAge: time.Duration(p.OldestUnackedAgeMs) * time.Millisecond})
	}
	return d, nil
}
