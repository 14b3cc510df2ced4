package broker

import (
	"context"
	"errors"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/offsets"
)

// Forwarder is the broker for a front-end that passes on what this node
// may not do itself. Each method runs the broker's method of the same name
// here and, when this node refused the request untouched because another
// node leads what it needs (the metadata, a partition), makes it of that
// node over the peer service (peer.go), for the same principal: that node
// authorizes it and answers. A request another node made of this one is
// never passed on again.
type Forwarder struct{ b *Broker }

// Forward is the broker passing requests on to the node that leads them.
func (b *Broker) Forward() Forwarder { return Forwarder{b} }

// DeleteRecords is Broker.DeleteRecords, on the partition's leader.
func (f Forwarder) DeleteRecords(ctx context.Context, pr Principal, topic string, part int32, offset int64) (int64, error) {
	start, err := f.b.DeleteRecords(ctx, pr, topic, part, offset)
	if addr, ok := passOn(ctx, err); ok {
		err = f.b.peerCall(ctx, addr, opDeleteRecords, pr, recordsReq{Topic: topic, Partition: part, Offset: offset}, &start)
	}
	return start, err
}

// RemoveNode is Broker.RemoveNode, on the metadata leader.
func (f Forwarder) RemoveNode(ctx context.Context, pr Principal, id string) ([]string, error) {
	moved, err := f.b.RemoveNode(ctx, pr, id)
	if addr, ok := passOn(ctx, err); ok {
		moved = nil
		err = f.b.peerCall(ctx, addr, opRemoveNode, pr, userReq{Name: id}, &moved)
	}
	return moved, err
}

// CommitOffsets is Broker.CommitOffsets, on the metadata leader.
func (f Forwarder) CommitOffsets(ctx context.Context, pr Principal, group, member string, generation int32, cs []offsets.Committed) error {
	err := f.b.CommitOffsets(ctx, pr, group, member, generation, cs)
	if addr, ok := passOn(ctx, err); ok {
		err = f.b.peerCall(ctx, addr, opCommitOffsets, pr, offsetsReq{Group: group, Member: member, Generation: generation, Offsets: cs}, nil)
	}
	return err
}

// FetchOffsets is Broker.FetchOffsets, on the metadata leader.
func (f Forwarder) FetchOffsets(ctx context.Context, pr Principal, group string, topics []string) ([]offsets.Committed, error) {
	cs, err := f.b.FetchOffsets(ctx, pr, group, topics)
	if addr, ok := passOn(ctx, err); ok {
		cs = nil
		err = f.b.peerCall(ctx, addr, opFetchOffsets, pr, offsetsReq{Group: group, Topics: topics}, &cs)
	}
	return cs, err
}

// ListGroups is Broker.ListGroups, on the metadata leader.
func (f Forwarder) ListGroups(ctx context.Context, pr Principal) ([]string, error) {
	gs, err := f.b.ListGroups(ctx, pr)
	if addr, ok := passOn(ctx, err); ok {
		gs = nil
		err = f.b.peerCall(ctx, addr, opListGroups, pr, none{}, &gs)
	}
	return gs, err
}

// DeleteGroup is Broker.DeleteGroup, on the metadata leader, which
// coordinates the groups.
func (f Forwarder) DeleteGroup(ctx context.Context, pr Principal, group string) error {
	err := f.b.DeleteGroup(ctx, pr, group)
	addr, ok := passOn(ctx, err)
	var nc *NotCoordinatorError
	if !ok && errors.As(err, &nc) && nc.Leader.RaftAddr != "" && !cluster.Forwarded(ctx) {
		addr, ok = nc.Leader.RaftAddr, true
	}
	if ok {
		err = f.b.peerCall(ctx, addr, opDeleteGroup, pr, offsetsReq{Group: group}, nil)
	}
	return err
}

// CreateUser is Broker.CreateUser, on the metadata leader (the password
// crosses the Raft port, which --raft-tls-* encrypts).
func (f Forwarder) CreateUser(ctx context.Context, pr Principal, name, password string, replace bool) error {
	err := f.b.CreateUser(ctx, pr, name, password, replace)
	if addr, ok := passOn(ctx, err); ok {
		err = f.b.peerCall(ctx, addr, opCreateUser, pr, userReq{Name: name, Password: password, Replace: replace}, nil)
	}
	return err
}

// DeleteUser is Broker.DeleteUser, on the metadata leader.
func (f Forwarder) DeleteUser(ctx context.Context, pr Principal, name string) error {
	err := f.b.DeleteUser(ctx, pr, name)
	if addr, ok := passOn(ctx, err); ok {
		err = f.b.peerCall(ctx, addr, opDeleteUser, pr, userReq{Name: name}, nil)
	}
	return err
}

// AddACLs is Broker.AddACLs, on the metadata leader.
func (f Forwarder) AddACLs(ctx context.Context, pr Principal, acls ...auth.ACL) error {
	err := f.b.AddACLs(ctx, pr, acls...)
	if addr, ok := passOn(ctx, err); ok {
		err = f.b.peerCall(ctx, addr, opAddACLs, pr, aclsReq{ACLs: acls}, nil)
	}
	return err
}

// RemoveACLs is Broker.RemoveACLs, on the metadata leader.
func (f Forwarder) RemoveACLs(ctx context.Context, pr Principal, filter auth.ACLFilter) ([]auth.ACL, error) {
	removed, err := f.b.RemoveACLs(ctx, pr, filter)
	if addr, ok := passOn(ctx, err); ok {
		removed = nil
		err = f.b.peerCall(ctx, addr, opRemoveACLs, pr, aclsReq{Filter: filter}, &removed)
	}
	return removed, err
}
