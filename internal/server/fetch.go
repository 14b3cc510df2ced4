package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
	pb "github.com/logd/logd/proto/logd/v1"
)

// Fetch returns committed batches from an offset, long-polling when there
// are none yet.
func (s *Server) Fetch(ctx context.Context, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	if err := s.enter(); err != nil {
		return nil, toStatus(err)
	}
	defer s.leave()
	if req.MaxWaitMs < 0 {
		return nil, invalidArg("fetch: max_wait_ms must be >= 0, got %d", req.MaxWaitMs)
	}
	p, maxBytes, err := s.fetchTarget(req.Topic, req.Partition, req.Offset, req.MaxBytes)
	if err != nil {
		return nil, toStatus(err)
	}
	wait := min(time.Duration(req.MaxWaitMs)*time.Millisecond, maxWait)
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		changed := p.Log.Changed()
		resp, release, err := s.boundedRead(ctx, s.readBudget, p, req.Offset, maxBytes, req.Decode, nil)
		if err != nil {
			return nil, toStatus(err)
		}
		// The response's memory counts against the budget until the
		// handler returns (gRPC encodes it right after).
		defer release()
		if len(resp.Batches) > 0 || wait == 0 {
			return resp, nil
		}
		select {
		case <-changed:
			if err := s.stillServed(p); err != nil {
				return nil, toStatus(err)
			}
		case <-timeout:
			return resp, nil
		case <-ctx.Done():
			return nil, toStatus(ctx.Err())
		case <-s.shutdown:
			return resp, nil
		}
	}
}

// stillServed reports whether p is still the partition the server serves
// under its name: a log closes when its topic is deleted (and wakes its
// waiters), and a recreated topic is a different partition.
func (s *Server) stillServed(p *partition.Partition) error {
	cur, err := s.topics.Partition(p.Topic, p.ID)
	if err != nil {
		return err
	}
	if cur != p {
		return status.Errorf(codes.NotFound, "topic %q was deleted and created again while this request waited: start again from a position in the new topic", p.Topic)
	}
	return nil
}

func (s *Server) fetchTarget(topic string, part int32, offset int64, maxBytes int32) (*partition.Partition, int, error) {
	p, err := s.topics.Partition(topic, part)
	if err != nil {
		return nil, 0, s.topicLookup(context.Background(), topic, err)
	}
	if s.cl != nil {
		// Reads are served by the leader: a follower may lag behind what
		// was committed and acknowledged.
		r, err := s.cl.replica(p)
		if err != nil {
			return nil, 0, err
		}
		// A read that may come back empty must not miss a record another
		// leader acknowledged: see cluster.linearizable.
		if offset >= p.Log.HighWatermark() {
			if err := s.cl.linearizable(context.Background(), r, "partition "+p.Name()); err != nil {
				return nil, 0, err
			}
		}
	}
	if offset < 0 {
		return nil, 0, invalidArg("fetch: offset must be >= 0, got %d (resolve earliest/latest with ListOffsets)", offset)
	}
	switch {
	case maxBytes < 0:
		return nil, 0, invalidArg("fetch: max_bytes must be >= 0, got %d", maxBytes)
	case maxBytes == 0:
		return p, defaultFetchBytes, nil
	}
	return p, min(int(maxBytes), maxFetchBytes), nil
}

// boundedRead is readAt under a read budget (Fetch's or the
// subscriptions'). buf, when not
// nil, is the caller's read buffer, charged by the caller; what the read
// allocates is charged here: its buffer when buf is nil (up to maxBytes),
// the decoded records when decode is set (as much again). It reserves that
// before reading and returns the unused part at once; release returns the
// rest once the response is sent. Waiting for budget ends with ctx.
func (s *Server) boundedRead(ctx context.Context, budget *memBudget, p *partition.Partition, offset int64, maxBytes int, decode bool, buf []byte) (*pb.FetchResponse, func(), error) {
	var want int64
	if buf == nil {
		want += int64(maxBytes)
	}
	if decode {
		want += int64(maxBytes) // decoded records copy what they hold
	}
	want = min(want, budget.bytes)
	if want > 0 {
		if err := budget.Acquire(ctx, want); err != nil {
			return nil, nil, err
		}
	}
	resp, err := s.readAt(p, offset, maxBytes, decode, buf)
	if err != nil {
		budget.Release(want)
		return nil, nil, err
	}
	var used int64
	if b := resp.Batches; cap(b) > 0 && (cap(buf) == 0 || &b[:cap(b)][cap(b)-1] != &buf[:cap(buf)][cap(buf)-1]) {
		// Read into memory of its own: nil buf, or a batch larger than buf.
		used += int64(cap(b))
	}
	if decode {
		used += int64(len(resp.Batches))
	}
	used = min(used, want)
	budget.Release(want - used)
	var once sync.Once
	return resp, func() { once.Do(func() { budget.Release(used) }) }, nil
}

// readAt reads what is committed at offset, into buf when it is large
// enough (see log.ReadInto). The high watermark reads as empty (the
// caller may wait for the next record); offsets below the log start or
// past the high watermark are OUT_OF_RANGE.
func (s *Server) readAt(p *partition.Partition, offset int64, maxBytes int, decode bool, buf []byte) (*pb.FetchResponse, error) {
	l := p.Log
	resp := &pb.FetchResponse{Topic: p.Topic, Partition: p.ID, NextOffset: offset}
	start, hw := l.StartOffset(), l.HighWatermark()
	resp.LogStartOffset, resp.HighWatermark = start, hw
	if offset < start || offset > hw {
		// At hw the reader waits for the next record; past it, for
		// offsets the log has not given out.
		return nil, outOfRange(offset, start, hw)
	}
	if offset == hw {
		return resp, nil
	}
	b, err := l.ReadInto(buf, offset, maxBytes)
	if errors.Is(err, log.ErrClosed) {
		if live := s.stillServed(p); live != nil {
			return nil, live
		}
	}
	if err != nil {
		var oor *log.OutOfRangeError
		if errors.As(err, &oor) && offset >= oor.HighWatermark && offset >= oor.StartOffset {
			return resp, nil
		}
		return nil, err
	}
	records, err := fillResponse(p, resp, b, offset, decode)
	if err != nil {
		return nil, err
	}
	s.m.fetchRecords.WithLabelValues(p.Topic).Add(float64(records))
	s.m.fetchBytes.WithLabelValues(p.Topic).Add(float64(len(resp.Batches)))
	return resp, nil
}

// ListOffsets resolves earliest, latest or a time to offsets.
func (s *Server) ListOffsets(ctx context.Context, req *pb.ListOffsetsRequest) (*pb.ListOffsetsResponse, error) {
	cfg, parts, err := s.topics.Partitions(req.Topic)
	if err != nil {
		return nil, s.topicLookup(ctx, req.Topic, err)
	}
	ids := req.Partitions
	if len(ids) == 0 {
		for i := range cfg.Partitions {
			ids = append(ids, i)
		}
	}
	resp := &pb.ListOffsetsResponse{Topic: req.Topic}
	for _, id := range ids {
		if id < 0 || id >= cfg.Partitions {
			return nil, status.Errorf(codes.NotFound, "topic %q has partitions 0 to %d, not %d", req.Topic, cfg.Partitions-1, id)
		}
		if s.cl != nil {
			po, err := s.cl.listOffset(ctx, parts[id], req)
			if err != nil {
				return nil, err
			}
			if po != nil {
				resp.Partitions = append(resp.Partitions, po)
				continue
			}
		}
		l := parts[id].Log
		po := &pb.PartitionOffset{Partition: id, LogStartOffset: l.StartOffset(), HighWatermark: l.HighWatermark()}
		switch req.Spec {
		case pb.OffsetSpec_OFFSET_SPEC_EARLIEST:
			po.Offset = po.LogStartOffset
		case pb.OffsetSpec_OFFSET_SPEC_LATEST:
			po.Offset = po.HighWatermark
		case pb.OffsetSpec_OFFSET_SPEC_TIMESTAMP:
			off, err := l.OffsetForTime(req.TimestampMs)
			if err != nil {
				return nil, toStatus(err)
			}
			po.Offset = off
		default:
			return nil, invalidArg("list offsets: unknown spec %v", req.Spec)
		}
		resp.Partitions = append(resp.Partitions, po)
	}
	return resp, nil
}
