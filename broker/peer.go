package broker

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/routing"
)

// The broker's side of the peer service (cluster/peerservice.go): a
// request this node refused untouched because another node leads what it
// needs (*NotLeaderError with Untouched) is made of that node over the
// Raft port, with the request's principal as data; the node asked runs
// the broker method of the same name for that principal, which
// authorizes it there as for a request of its own clients. Only a node of
// this cluster can make a peer call (the Raft transport's cluster id,
// and --raft-tls-*), and the public API lets no client speak for another
// principal. A call the node asked answers "not leader" to is passed on
// by the caller (cluster.Call), never by the node asked.
//
// The topic changes are passed on by the broker's own methods (every
// front-end gets them); the other writes through Forward, which the
// gRPC front-end calls.

// The operations; their names are part of the protocol.
const (
	opCreateTopic   = "topic.create"
	opAlterTopic    = "topic.alter"
	opAddPartitions = "topic.add_partitions"
	opDeleteTopic   = "topic.delete"
	opDeleteRecords = "records.delete"
	opRemoveNode    = "node.remove"
	opCommitOffsets = "offsets.commit"
	opFetchOffsets  = "offsets.fetch"
	opListGroups    = "groups.list"
	opDeleteGroup   = "groups.delete"
	opCreateUser    = "user.create"
	opDeleteUser    = "user.delete"
	opAddACLs       = "acls.add"
	opRemoveACLs    = "acls.remove"
	// Served by any node: anynode.go, readforward.go.
	opProduce          = "records.produce"
	opFetch            = "records.fetch"
	opDescribeGroup    = "groups.describe"
	opListMemberGroups = "groups.list_members"
	opRecordCounts     = "metrics.record_counts" // recordcounts.go
)

// The requests and answers of the operations.
type (
	topicReq struct {
		Config partition.TopicConfig  `json:"config,omitzero"`
		Topic  string                 `json:"topic,omitempty"`
		Change partition.ConfigChange `json:"change,omitzero"`
		Count  int32                  `json:"count,omitempty"`
		// Own marks a creation this node's own code asked for, no client
		// (a share group's dead-letter topic): no principal to authorize.
		Own bool `json:"own,omitempty"`
	}
	recordsReq struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
	}
	offsetsReq struct {
		Group      string              `json:"group"`
		Member     string              `json:"member,omitempty"`
		Generation int32               `json:"generation"`
		Offsets    []offsets.Committed `json:"offsets,omitempty"`
		Topics     []string            `json:"topics,omitempty"`
	}
	userReq struct {
		Name     string `json:"name"`
		Password string `json:"password,omitempty"`
		Replace  bool   `json:"replace,omitempty"`
	}
	aclsReq struct {
		ACLs   []auth.ACL     `json:"acls,omitempty"`
		Filter auth.ACLFilter `json:"filter,omitzero"`
	}
	none struct{}
)

// handlePeers registers the operations with the cluster (b.Cluster(),
// set).
func (b *Broker) handlePeers() {
	handle(b, opCreateTopic, func(ctx context.Context, pr Principal, r topicReq) (any, error) {
		if r.Own {
			return b.peerCreateOwnTopic(ctx, r)
		}
		return b.CreateTopic(ctx, pr, r.Config)
	})
	handle(b, opAlterTopic, func(ctx context.Context, pr Principal, r topicReq) (any, error) {
		return b.AlterTopic(ctx, pr, r.Topic, r.Change)
	})
	handle(b, opAddPartitions, func(ctx context.Context, pr Principal, r topicReq) (any, error) {
		return b.AddPartitions(ctx, pr, r.Topic, r.Count)
	})
	handle(b, opDeleteTopic, func(ctx context.Context, pr Principal, r topicReq) (any, error) {
		return none{}, b.DeleteTopic(ctx, pr, r.Topic)
	})
	handle(b, opDeleteRecords, func(ctx context.Context, pr Principal, r recordsReq) (any, error) {
		return b.DeleteRecords(ctx, pr, r.Topic, r.Partition, r.Offset)
	})
	handle(b, opRemoveNode, func(ctx context.Context, pr Principal, r userReq) (any, error) {
		return b.RemoveNode(ctx, pr, r.Name)
	})
	handle(b, opCommitOffsets, func(ctx context.Context, pr Principal, r offsetsReq) (any, error) {
		return none{}, b.CommitOffsets(ctx, pr, r.Group, r.Member, r.Generation, r.Offsets)
	})
	handle(b, opFetchOffsets, func(ctx context.Context, pr Principal, r offsetsReq) (any, error) {
		return b.FetchOffsets(ctx, pr, r.Group, r.Topics)
	})
	handle(b, opListGroups, func(ctx context.Context, pr Principal, _ none) (any, error) {
		return b.ListGroups(ctx, pr)
	})
	handle(b, opDeleteGroup, func(ctx context.Context, pr Principal, r offsetsReq) (any, error) {
		return none{}, b.DeleteGroup(ctx, pr, r.Group)
	})
	handle(b, opCreateUser, func(ctx context.Context, pr Principal, r userReq) (any, error) {
		return none{}, b.CreateUser(ctx, pr, r.Name, r.Password, r.Replace)
	})
	handle(b, opDeleteUser, func(ctx context.Context, pr Principal, r userReq) (any, error) {
		return none{}, b.DeleteUser(ctx, pr, r.Name)
	})
	handle(b, opAddACLs, func(ctx context.Context, pr Principal, r aclsReq) (any, error) {
		return none{}, b.AddACLs(ctx, pr, r.ACLs...)
	})
	handle(b, opRemoveACLs, func(ctx context.Context, pr Principal, r aclsReq) (any, error) {
		return b.RemoveACLs(ctx, pr, r.Filter)
	})
	handle(b, opProduce, func(ctx context.Context, pr Principal, r produceReq) (any, error) {
		if r.DeadLetter {
			return b.peerDeadLetter(ctx, r)
		}
		return b.Produce(ctx, ProduceRequest{Principal: pr, Topic: r.Topic, Partition: r.Partition, Batch: r.Batch, Acks: r.Acks, TransactionalID: r.TransactionalID, AddToTxn: r.AddToTxn})
	})
	handle(b, opFetch, b.peerFetch)
	handle(b, opRecordCounts, b.peerRecordCounts)
	b.handleKVPeers() // kv_forward.go
	b.handleTxnPeers()
	b.handleElectPeers()       // elect.go
	b.handleMovePeers()        // reassign.go
	b.handleQuotaPeers()       // quota.go
	b.handleShareConfigPeers() // share_config.go
	b.handleSharePartPeers()   // share_remote.go
	handle(b, opDescribeGroup, func(ctx context.Context, pr Principal, r groupReq) (any, error) {
		d, err := b.DescribeGroup(ctx, pr, r.Group)
		return d, coordinatorAnswer(err)
	})
	handle(b, opListMemberGroups, func(ctx context.Context, pr Principal, _ groupReq) (any, error) {
		gs, err := b.ListMemberGroups(ctx, pr)
		return gs, coordinatorAnswer(err)
	})
}

// handle registers op: its request is decoded into a Req, and fn runs for
// the principal the call carries, with the calling node's address as the
// client's (the audit names it).
func handle[Req any](b *Broker, op string, fn func(ctx context.Context, pr Principal, r Req) (any, error)) {
	b.Cluster().Handle(op, func(ctx context.Context, call cluster.PeerCall) (any, error) {
		var r Req
		if err := json.Unmarshal(call.Body, &r); err != nil {
			return nil, kind.Errorf(kind.ErrInvalidArgument, "peer call %s: %v", op, err)
		}
		if _, err := Principal(call.Principal).Auth(); err != nil {
			return nil, kind.Errorf(kind.ErrInvalidArgument, "peer call %s: principal %q: %v", op, call.Principal, err)
		}
		ctx = auth.NewContext(ctx, auth.Identity{Addr: call.From})
		out, err := fn(ctx, Principal(call.Principal), r)
		if err != nil {
			return nil, toPeerError(err)
		}
		return out, nil
	})
}

// passOn is the Raft address of the node to make a request of, when err
// is an untouched "not leader" answer of this node's control plane naming
// the node that leads (a node that runs alone never answers one), and the
// request is not one another node made of this one.
func passOn(ctx context.Context, err error) (string, bool) {
	var nl *NotLeaderError
	if !errors.As(err, &nl) || !nl.Untouched || nl.Leader.RaftAddr == "" || cluster.Forwarded(ctx) {
		return "", false
	}
	return nl.Leader.RaftAddr, true
}

// peerCall makes op of the node at raftAddr for pr, its error read back
// as one of the kinds the broker's callers map.
func peerCall(ctx context.Context, cl *cluster.Cluster, raftAddr, op string, pr Principal, req, resp any) error {
	return fromPeerError(cl.Call(ctx, raftAddr, op, string(pr), req, resp))
}

// peerCall is peerCall of this node's cluster.
func (b *Broker) peerCall(ctx context.Context, raftAddr, op string, pr Principal, req, resp any) error {
	return peerCall(ctx, b.Cluster(), raftAddr, op, pr, req, resp)
}

// The broker's error kinds a peer call carries (package cluster carries
// its own and the generic ones); the names are part of the protocol.
var peerKinds = []struct {
	name string
	err  error
}{
	{"denied", auth.ErrDenied},
	{"user_exists", ErrUserExists},
	{"unknown_user", auth.ErrUnknownUser},
	{"disk_full", ErrDiskFull},
	{"auth_invalid", auth.ErrInvalid},
	{"unknown_member", groups.ErrUnknownMember},
	{"rebalance_in_progress", groups.ErrRebalanceInProgress},
	{"inconsistent_protocol", groups.ErrInconsistentProtocol},
	{"invalid_session_timeout", groups.ErrInvalidSessionTimeout},
	{"invalid_group", groups.ErrInvalidGroup},
	{"unknown_assignor", groups.ErrUnknownAssignor},
	{"group_not_found", groups.ErrGroupNotFound},
	{"group_not_empty", groups.ErrGroupNotEmpty},
	{"coordinator_closed", groups.ErrCoordinatorClosed},
	{"illegal_generation", groups.ErrIllegalGeneration},
}

const kindGeneration = "generation"

// toPeerError names err's kind when it is one of the broker's; others
// package cluster names.
func toPeerError(err error) error {
	var ge *groups.GenerationError
	if errors.As(err, &ge) {
		return &cluster.PeerError{Kind: kindGeneration, Message: err.Error(), Detail: map[string]string{"group": ge.Group,
			"member": ge.Member, "given": strconv.Itoa(int(ge.Given)), "current": strconv.Itoa(int(ge.Current))}}
	}
	for _, k := range peerKinds {
		if errors.Is(err, k.err) {
			return &cluster.PeerError{Kind: k.name, Message: err.Error()}
		}
	}
	return err
}

// fromPeerError reads one of the broker's kinds back.
func fromPeerError(err error) error {
	var pe *cluster.PeerError
	if !errors.As(err, &pe) {
		return err
	}
	if pe.Kind == kindGeneration {
		n := func(k string) int32 { v, _ := strconv.Atoi(pe.Detail[k]); return int32(v) }
		return &groups.GenerationError{Group: pe.Detail["group"], Member: pe.Detail["member"], Given: n("given"), Current: n("current")}
	}
	for _, k := range peerKinds {
		if k.name == pe.Kind {
			return kind.Errorf(k.err, "%s", pe.Message)
		}
	}
	return err
}

// The topic changes, made of cl's metadata leader at addr.

func peerCreateTopic(ctx context.Context, cl *cluster.Cluster, addr string, pr Principal, cfg partition.TopicConfig) (partition.TopicConfig, error) {
	var out partition.TopicConfig
	err := peerCall(ctx, cl, addr, opCreateTopic, pr, topicReq{Config: cfg, Own: pr == ""}, &out)
	return out, err
}

// peerCreateOwnTopic is a creation another node's own code asked for
// (peerCreateTopic without a principal: no client asked, so there is
// none to authorize; only a node of the cluster makes peer calls).
func (b *Broker) peerCreateOwnTopic(ctx context.Context, r topicReq) (any, error) {
	if err := routing.ValidateTopicName(r.Config.Name); err != nil {
		return nil, kind.Errorf(kind.ErrInvalidArgument, "create topic: %v", err)
	}
	return b.plane.createTopic(ctx, "", r.Config)
}

func peerAlterTopic(ctx context.Context, cl *cluster.Cluster, addr string, pr Principal, topic string, ch partition.ConfigChange) (partition.TopicConfig, error) {
	var out partition.TopicConfig
	err := peerCall(ctx, cl, addr, opAlterTopic, pr, topicReq{Topic: topic, Change: ch}, &out)
	return out, err
}

func peerAddPartitions(ctx context.Context, cl *cluster.Cluster, addr string, pr Principal, topic string, count int32) (partition.TopicConfig, error) {
	var out partition.TopicConfig
	err := peerCall(ctx, cl, addr, opAddPartitions, pr, topicReq{Topic: topic, Count: count}, &out)
	return out, err
}

func peerDeleteTopic(ctx context.Context, cl *cluster.Cluster, addr string, pr Principal, topic string) error {
	return peerCall(ctx, cl, addr, opDeleteTopic, pr, topicReq{Topic: topic}, nil)
}
