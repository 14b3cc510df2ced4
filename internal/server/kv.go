package server

import (
	"context"
	"math"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	pb "github.com/logd/logd/proto/logd/v1"
)

// The gRPC KV service: the key-value view of a compacted topic
// (docs/kv.md), served on any node through the broker's Forwarder.

// kvServer serves the KV service.
type kvServer struct {
	pb.UnimplementedKVServer
	s *Server
}

// Get returns the key's newest record.
func (k *kvServer) Get(ctx context.Context, req *pb.KVGetRequest) (*pb.KVGetResponse, error) {
	rec, ok, err := k.s.b.Forward().KVGet(ctx, principal(ctx), req.Topic, req.Key, broker.KVGetOptions{Stale: req.Stale})
	if err != nil {
		return nil, err
	}
	if !ok {
		return &pb.KVGetResponse{}, nil
	}
	return &pb.KVGetResponse{Found: true, Entry: kvEntryPB(rec)}, nil
}

// Put stores the key's new value, conditional with expected_offset.
func (k *kvServer) Put(ctx context.Context, req *pb.KVPutRequest) (*pb.KVPutResponse, error) {
	value := req.Value
	if value == nil {
		value = []byte{} // an empty value, not a tombstone: Delete makes those
	}
	hs := make([]batch.Header, len(req.Headers))
	for i, h := range req.Headers {
		hs[i] = batch.Header{Key: h.Key, Value: h.Value}
	}
	w, err := kvWriter(req.Writer)
	if err != nil {
		return nil, err
	}
	res, err := k.s.b.Forward().KVPut(ctx, principal(ctx), req.Topic, broker.KVPut{Key: req.Key, Value: value, Headers: hs,
		Expected: req.ExpectedOffset, Writer: w})
	if err != nil {
		return nil, err
	}
	return kvPutPB(res), nil
}

// Delete stores a tombstone of the key.
func (k *kvServer) Delete(ctx context.Context, req *pb.KVDeleteRequest) (*pb.KVPutResponse, error) {
	w, err := kvWriter(req.Writer)
	if err != nil {
		return nil, err
	}
	res, err := k.s.b.Forward().KVPut(ctx, principal(ctx), req.Topic, broker.KVPut{Key: req.Key, Expected: req.ExpectedOffset, Writer: w})
	if err != nil {
		return nil, err
	}
	return kvPutPB(res), nil
}

// List returns a page of keys with their newest records.
func (k *kvServer) List(ctx context.Context, req *pb.KVListRequest) (*pb.KVListResponse, error) {
	page, err := k.s.b.Forward().KVList(ctx, principal(ctx), req.Topic, broker.KVListRequest{Prefix: req.Prefix,
		After: req.After, Limit: int(req.Limit), Stale: req.Stale})
	if err != nil {
		return nil, err
	}
	out := &pb.KVListResponse{More: page.More, Last: page.Last, Entries: make([]*pb.KVEntry, len(page.Records))}
	for i, r := range page.Records {
		out.Entries[i] = kvEntryPB(r)
	}
	return out, nil
}

// Watch streams the puts and deletes of the keys with the prefix.
func (k *kvServer) Watch(req *pb.KVWatchRequest, stream pb.KV_WatchServer) error {
	ctx := stream.Context()
	return k.s.b.AnyNode().KVWatch(ctx, principal(ctx), req.Topic, req.Prefix, func(r broker.KVRecord) error {
		return stream.Send(kvEntryPB(r))
	})
}

func kvEntryPB(r broker.KVRecord) *pb.KVEntry {
	e := &pb.KVEntry{Key: r.Key, Value: r.Value, Partition: r.Partition, Offset: r.Offset, TimestampMs: r.TimestampMs,
		Deleted: r.Value == nil}
	for _, h := range r.Headers {
		e.Headers = append(e.Headers, &pb.Header{Key: h.Key, Value: h.Value})
	}
	return e
}

// kvWriter checks a put's writer: none, or an id > 0 with an epoch an
// int16 holds.
func kvWriter(w *pb.KVWriter) (broker.KVWriter, error) {
	if w == nil {
		return broker.KVWriter{}, nil
	}
	if w.Id <= 0 || w.Epoch < 0 || w.Epoch > math.MaxInt16 {
		return broker.KVWriter{}, invalidArg("key-value put: writer id %d epoch %d: want an id > 0 and an epoch from 0 to %d", w.Id, w.Epoch, math.MaxInt16)
	}
	return broker.KVWriter{ID: w.Id, Epoch: int16(w.Epoch)}, nil
}

func kvPutPB(r broker.KVPutResult) *pb.KVPutResponse {
	return &pb.KVPutResponse{Partition: r.Partition, Offset: r.Offset, TimestampMs: r.TimestampMs}
}
