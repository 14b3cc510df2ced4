package broker

import (
	"context"
	"errors"

	"github.com/logd/logd/auth"
)

// The key-value view served on any node: a get, put or partition's share
// of a list this node refused untouched for not leading the partition is
// made of its leader over the peer service (peer.go), for the same
// principal, which that node authorizes.

// The operations; their names are part of the protocol.
const (
	opKVGet  = "kv.get"
	opKVPut  = "kv.put"
	opKVList = "kv.list"
)

type (
	kvReq struct {
		Topic     string        `json:"topic"`
		Key       []byte        `json:"key,omitempty"`
		Stale     bool          `json:"stale,omitempty"`
		Put       KVPut         `json:"put,omitzero"`
		Partition int32         `json:"partition,omitempty"`
		List      KVListRequest `json:"list,omitzero"`
	}
	kvGetAnswer struct {
		Record KVRecord `json:"record,omitzero"`
		Found  bool     `json:"found,omitempty"`
	}
	// kvPutAnswer carries a conditional put's refusal whole (the offsets
	// it names), as an answer rather than an error.
	kvPutAnswer struct {
		Result   KVPutResult       `json:"result"`
		Conflict *KeyConflictError `json:"conflict,omitempty"`
	}
)

// handleKVPeers registers the view's operations with the cluster.
func (b *Broker) handleKVPeers() {
	handle(b, opKVGet, func(ctx context.Context, pr Principal, r kvReq) (any, error) {
		rec, ok, err := b.KVGet(ctx, pr, r.Topic, r.Key, KVGetOptions{Stale: r.Stale})
		return kvGetAnswer{Record: rec, Found: ok}, err
	})
	handle(b, opKVPut, func(ctx context.Context, pr Principal, r kvReq) (any, error) {
		res, err := b.KVPut(ctx, pr, r.Topic, r.Put)
		var ce *KeyConflictError
		if errors.As(err, &ce) {
			return kvPutAnswer{Conflict: ce}, nil
		}
		return kvPutAnswer{Result: res}, err
	})
	handle(b, opKVList, func(ctx context.Context, pr Principal, r kvReq) (any, error) {
		if err := b.Authorize(ctx, pr, auth.OpRead, auth.Topic(r.Topic)); err != nil {
			return nil, err
		}
		if err := b.enter(); err != nil {
			return nil, err
		}
		defer b.leave()
		return b.kvListOne(ctx, r.Topic, r.Partition, r.List)
	})
}

// KVGet is Broker.KVGet on the partition's leader (with Stale: on a node
// with a replica of it).
func (f Forwarder) KVGet(ctx context.Context, pr Principal, topic string, key []byte, opts KVGetOptions) (KVRecord, bool, error) {
	rec, ok, err := f.b.KVGet(ctx, pr, topic, key, opts)
	if addr, pass := passOn(ctx, err); pass {
		var a kvGetAnswer
		err = f.b.peerCall(ctx, addr, opKVGet, pr, kvReq{Topic: topic, Key: key, Stale: opts.Stale}, &a)
		rec, ok = a.Record, a.Found
	}
	return rec, ok, err
}

// KVPut is Broker.KVPut on the partition's leader.
func (f Forwarder) KVPut(ctx context.Context, pr Principal, topic string, put KVPut) (KVPutResult, error) {
	res, err := f.b.KVPut(ctx, pr, topic, put)
	if addr, pass := passOn(ctx, err); pass {
		var a kvPutAnswer
		err = f.b.peerCall(ctx, addr, opKVPut, pr, kvReq{Topic: topic, Put: put}, &a)
		res = a.Result
		if err == nil && a.Conflict != nil {
			err = a.Conflict
		}
	}
	return res, err
}

// KVDelete is Broker.KVDelete on the partition's leader.
func (f Forwarder) KVDelete(ctx context.Context, pr Principal, topic string, key []byte, expected *int64) (KVPutResult, error) {
	return f.KVPut(ctx, pr, topic, KVPut{Key: key, Expected: expected})
}

// KVList is Broker.KVList with each partition's share read on its leader.
func (f Forwarder) KVList(ctx context.Context, pr Principal, topic string, r KVListRequest) (KVPage, error) {
	b := f.b
	return b.kvList(ctx, pr, topic, r, func(ctx context.Context, part int32, r KVListRequest) (KVPage, error) {
		page, err := b.kvListOne(ctx, topic, part, r)
		if addr, pass := passOn(ctx, err); pass {
			page = KVPage{}
			err = b.peerCall(ctx, addr, opKVList, pr, kvReq{Topic: topic, Partition: part, List: r}, &page)
		}
		return page, err
	})
}

// KVGet is Forwarder.KVGet.
func (a AnyNode) KVGet(ctx context.Context, pr Principal, topic string, key []byte, opts KVGetOptions) (KVRecord, bool, error) {
	return a.Forward().KVGet(ctx, pr, topic, key, opts)
}

// KVPut is Forwarder.KVPut.
func (a AnyNode) KVPut(ctx context.Context, pr Principal, topic string, put KVPut) (KVPutResult, error) {
	return a.Forward().KVPut(ctx, pr, topic, put)
}

// KVDelete is Forwarder.KVDelete.
func (a AnyNode) KVDelete(ctx context.Context, pr Principal, topic string, key []byte, expected *int64) (KVPutResult, error) {
	return a.Forward().KVDelete(ctx, pr, topic, key, expected)
}

// KVList is Forwarder.KVList.
func (a AnyNode) KVList(ctx context.Context, pr Principal, topic string, r KVListRequest) (KVPage, error) {
	return a.Forward().KVList(ctx, pr, topic, r)
}
