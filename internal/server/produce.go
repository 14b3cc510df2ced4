package server

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
	pb "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/routing"
)

// streamInflight bounds the requests one ProduceStream may have in flight;
// past it the server stops reading the stream (backpressure through gRPC
// flow control) instead of buffering.
const streamInflight = 64

// Produce appends one batch (or routed records) and answers once durable.
func (s *Server) Produce(ctx context.Context, req *pb.ProduceRequest) (*pb.ProduceResponse, error) {
	resp, err := s.produce(ctx, req)
	if err != nil {
		err = toStatus(err)
		s.m.produceErrors.WithLabelValues(status.Code(err).String()).Inc()
		return nil, err
	}
	return resp, nil
}

// startProduce starts a produce request and returns what waits for its
// answer: a single batch's write is started (in order with the
// partition's other requests) and waited for by finish; other requests
// are done before startProduce returns.
func (s *Server) startProduce(ctx context.Context, req *pb.ProduceRequest) (finish func() (*pb.ProduceResponse, error)) {
	done := func(resp *pb.ProduceResponse, err error) func() (*pb.ProduceResponse, error) {
		return func() (*pb.ProduceResponse, error) { return resp, err }
	}
	if len(req.Batch) == 0 || len(req.Records) > 0 || req.Partition == nil {
		return done(s.produce(ctx, req))
	}
	start := time.Now()
	if err := s.enter(); err != nil {
		return done(nil, err)
	}
	if err := ctx.Err(); err != nil {
		s.leave()
		return done(nil, err)
	}
	cfg, parts, err := s.topics.Partitions(req.Topic)
	if err != nil {
		s.leave()
		return done(nil, s.topicLookup(ctx, req.Topic, err))
	}
	if err := s.disk.checkAppend(); err != nil {
		s.leave()
		return done(nil, err)
	}
	id := *req.Partition
	if id < 0 || int(id) >= len(parts) {
		s.leave()
		return done(nil, status.Errorf(codes.NotFound, "topic %q has partitions 0 to %d, not %d (list topics with `logd topic list`)", req.Topic, cfg.Partitions-1, id))
	}
	wait, err := s.startAppendBatch(ctx, parts[id], req.Batch, req.Acks)
	if err != nil {
		s.leave()
		return done(nil, err)
	}
	return func() (*pb.ProduceResponse, error) {
		defer s.leave()
		a, err := wait()
		if err != nil {
			return nil, err
		}
		s.m.produceLatency.Observe(time.Since(start).Seconds())
		return &pb.ProduceResponse{RequestId: req.RequestId, Topic: req.Topic, Appends: []*pb.PartitionAppend{a}}, nil
	}
}

func (s *Server) produce(ctx context.Context, req *pb.ProduceRequest) (*pb.ProduceResponse, error) {
	start := time.Now()
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	// A request its client already gave up on is not applied (a cancelled
	// request that is already being appended still may be).
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg, parts, err := s.topics.Partitions(req.Topic)
	if err != nil {
		return nil, s.topicLookup(ctx, req.Topic, err)
	}
	if err := s.disk.checkAppend(); err != nil {
		return nil, err
	}
	resp := &pb.ProduceResponse{RequestId: req.RequestId, Topic: req.Topic}
	switch {
	case len(req.Batch) > 0 && len(req.Records) > 0:
		return nil, invalidArg("produce: set either batch or records, not both")
	case len(req.Batch) > 0:
		if req.Partition == nil {
			return nil, invalidArg("produce: a batch needs its partition: set partition (0 to %d)", cfg.Partitions-1)
		}
		id := *req.Partition
		if id < 0 || int(id) >= len(parts) {
			return nil, status.Errorf(codes.NotFound, "topic %q has partitions 0 to %d, not %d (list topics with `logd topic list`)", req.Topic, cfg.Partitions-1, id)
		}
		p := parts[id]
		a, err := s.appendBatch(ctx, p, req.Batch, req.Acks)
		if err != nil {
			return nil, err
		}
		resp.Appends = append(resp.Appends, a)
	case len(req.Records) > 0:
		byPart, err := s.routeRecords(req, parts)
		if err != nil {
			return nil, err
		}
		// Encode and check every partition's batch before appending any, so
		// a rejected request stores nothing (a retry must not duplicate).
		batches := make(map[int32][]byte, len(byPart))
		for id, recs := range byPart {
			b := batch.Encode(nil, 0, batch.NoProducer, recs)
			if len(b) > s.cfg.MaxBatchBytes {
				return nil, status.Errorf(codes.ResourceExhausted,
					"produce: the records for partition %d encode to %d bytes, over the %d-byte batch limit: send fewer or smaller records", id, len(b), s.cfg.MaxBatchBytes)
			}
			batches[id] = b
		}
		for _, p := range parts {
			b, ok := batches[p.ID]
			if !ok {
				continue
			}
			a, err := s.appendBatch(ctx, p, b, req.Acks)
			if err != nil {
				return nil, err
			}
			resp.Appends = append(resp.Appends, a)
		}
	default:
		return nil, invalidArg("produce: empty request: send a batch or at least one record")
	}
	s.m.produceLatency.Observe(time.Since(start).Seconds())
	return resp, nil
}

// appendBatch checks a client's batch and appends it: to the log on a
// single node, through the partition's Raft group in a cluster.
func (s *Server) appendBatch(ctx context.Context, p *partition.Partition, b []byte, acks pb.Acks) (*pb.PartitionAppend, error) {
	finish, err := s.startAppendBatch(ctx, p, b, acks)
	if err != nil {
		return nil, err
	}
	return finish()
}

// startAppendBatch is appendBatch up to the start of the write: finish
// waits for it.
func (s *Server) startAppendBatch(ctx context.Context, p *partition.Partition, b []byte, acks pb.Acks) (func() (*pb.PartitionAppend, error), error) {
	if len(b) > s.cfg.MaxBatchBytes {
		return nil, status.Errorf(codes.ResourceExhausted,
			"produce: batch of %d bytes is over the %d-byte limit: send smaller batches", len(b), s.cfg.MaxBatchBytes)
	}
	info, err := batch.Validate(b)
	switch {
	case errors.Is(err, batch.ErrUnsupported):
		return nil, invalidArg("produce: %v", err)
	case err != nil:
		return nil, invalidArg("produce: malformed record batch (%v): send exactly one Kafka v2 record batch (magic 2, CRC-32C, records with offset deltas 0, 1, 2...)", err)
	}
	n := len(b)
	if s.cl == nil {
		// Written in order now; finish waits for the fsync, which the
		// producer's next batches, started meanwhile, share.
		wait, err := p.StartAppend(b, info)
		return func() (*pb.PartitionAppend, error) {
			if err != nil {
				return s.appended(p, n, info, partition.AppendResult{}, err)
			}
			res, err := wait(ctx)
			return s.appended(p, n, info, res, err)
		}, nil
	}
	r, err := s.cl.replica(p)
	if err != nil {
		return nil, err
	}
	// The producer's next batches may start while this one waits:
	// they pipeline through Raft (see partition.StartAppendVia).
	lead, err := r.Leading(ctx)
	if err != nil {
		return nil, s.clusterStatus(err)
	}
	wait, err := p.StartAppendVia(b, info, lead, func(b []byte, after partition.Write) (partition.Write, error) {
		var prev *replication.Write
		if a, ok := after.(raftWrite); ok {
			prev = a.w
		}
		w, err := r.Start(b, acks == pb.Acks_ACKS_LEADER, prev)
		if err != nil {
			return nil, err
		}
		return raftWrite{w}, nil
	})
	if err != nil {
		return nil, s.clusterStatus(err)
	}
	return func() (*pb.PartitionAppend, error) {
		res, err := wait(ctx)
		if err != nil {
			err = s.clusterStatus(err)
		}
		return s.appended(p, n, info, res, err)
	}, nil
}

// appended answers an append and counts it.
func (s *Server) appended(p *partition.Partition, size int, info batch.Info, res partition.AppendResult, err error) (*pb.PartitionAppend, error) {
	if errors.Is(err, log.ErrClosed) {
		if live := s.stillServed(p); live != nil {
			return nil, live // the topic was deleted meanwhile
		}
	}
	if err != nil {
		return nil, err
	}
	if res.Duplicate {
		s.m.produceDupes.WithLabelValues(p.Topic).Inc()
	} else {
		s.m.produceRecords.WithLabelValues(p.Topic).Add(float64(info.NumRecords))
		s.m.produceBytes.WithLabelValues(p.Topic).Add(float64(size))
	}
	return &pb.PartitionAppend{Partition: p.ID, BaseOffset: res.BaseOffset, LastOffset: res.LastOffset, Duplicate: res.Duplicate}, nil
}

// raftWrite is a batch on its way through a partition's Raft group, as
// the partition's dedup sees it.
type raftWrite struct{ w *replication.Write }

func (r raftWrite) Wait(ctx context.Context) (partition.AppendResult, error) {
	a, err := r.w.Wait(ctx)
	return partition.AppendResult{BaseOffset: a.BaseOffset, LastOffset: a.LastOffset}, err
}

func (r raftWrite) Done() <-chan struct{} { return r.w.Done() }

func (r raftWrite) Result() (partition.AppendResult, error) {
	a, err := r.w.Result()
	return partition.AppendResult{BaseOffset: a.BaseOffset, LastOffset: a.LastOffset}, err
}

var roundRobin atomic.Uint32

// recordOverhead is the least a record costs in a batch besides its key,
// value and headers: length, attributes, timestamp and offset deltas, key
// and value lengths, header count (varints of one byte each at least).
const recordOverhead = 7

// routeRecords assigns plain records to partitions: the request's partition,
// else murmur2 of the key, else round-robin.
func (s *Server) routeRecords(req *pb.ProduceRequest, parts []*partition.Partition) (map[int32][]batch.Record, error) {
	n := len(parts)
	if req.Partition != nil && (*req.Partition < 0 || int(*req.Partition) >= n) {
		return nil, status.Errorf(codes.NotFound, "topic %q has partitions 0 to %d, not %d", req.Topic, n-1, *req.Partition)
	}
	now := time.Now().UnixMilli()
	out := make(map[int32][]batch.Record)
	total := 0
	// Count each record's framing too (recordOverhead bounds it from
	// below), so a flood of tiny records is refused before it is converted.
	for _, r := range req.Records {
		total += recordOverhead + len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			total += len(h.Key) + len(h.Value)
		}
	}
	if total > s.cfg.MaxBatchBytes {
		return nil, status.Errorf(codes.ResourceExhausted,
			"produce: %d records of about %d bytes in all are over the %d-byte limit: send fewer or smaller records", len(req.Records), total, s.cfg.MaxBatchBytes)
	}
	// Unkeyed records of one request stick to one partition (one batch).
	sticky := int32(roundRobin.Add(1) % uint32(n))
	for _, r := range req.Records {
		var pid int32
		switch {
		case req.Partition != nil:
			pid = *req.Partition
		case len(r.Key) > 0:
			pid = routing.ForKey(r.Key, n)
		default:
			pid = sticky
		}
		ts := r.TimestampMs
		if ts == 0 {
			ts = now
		}
		rec := batch.Record{Timestamp: ts, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, batch.Header{Key: h.Key, Value: h.Value})
		}
		out[pid] = append(out[pid], rec)
	}
	return out, nil
}

// ProduceStream pipelines produce requests. Requests for one partition are
// appended in the order they arrive; different partitions proceed in
// parallel. A failed request is answered with its error, the stream goes on.
func (s *Server) ProduceStream(stream pb.Log_ProduceStreamServer) error {
	if err := s.enter(); err != nil {
		return toStatus(err)
	}
	defer s.leave()
	ctx := stream.Context()
	out := make(chan *pb.ProduceResponse, streamInflight)
	sendErr := make(chan error, 1)
	var sendWG sync.WaitGroup
	sendWG.Add(1)
	go func() {
		defer sendWG.Done()
		for r := range out {
			if err := stream.Send(r); err != nil {
				sendErr <- err
				for range out { // drain so workers never block
				}
				return
			}
		}
	}()

	// A lane per (topic, partition) keeps each partition's requests in
	// order; a lane's goroutine exits as soon as its queue is empty, so a
	// stream holds at most streamInflight requests and as many lanes,
	// however many partitions it names.
	slots := make(chan struct{}, streamInflight)
	var lanesMu sync.Mutex
	lanes := map[string]chan *pb.ProduceRequest{}
	// tails: the last answer of a lane that exited, which the next lane
	// for its key answers after (its requests may still be waiting).
	tails := map[string]<-chan struct{}{}
	var lanesWG sync.WaitGroup
	work := func(key string, ch chan *pb.ProduceRequest, prev <-chan struct{}) {
		defer lanesWG.Done()
		for {
			var req *pb.ProduceRequest
			select {
			case req = <-ch:
			default:
				lanesMu.Lock()
				if len(ch) == 0 {
					delete(lanes, key)
					select {
					case <-prev:
					default:
						tails[key] = prev
					}
					lanesMu.Unlock()
					return
				}
				lanesMu.Unlock()
				continue
			}
			// Started in order here; answered in order by a goroutine
			// each, so the lane starts its next request meanwhile.
			finish := s.startProduce(ctx, req)
			done := make(chan struct{})
			lanesWG.Add(1)
			go func(prev <-chan struct{}) {
				defer lanesWG.Done()
				defer close(done)
				resp, err := finish()
				if err != nil {
					st := status.Convert(toStatus(err))
					s.m.produceErrors.WithLabelValues(st.Code().String()).Inc()
					resp = &pb.ProduceResponse{RequestId: req.RequestId, Topic: req.Topic,
						ErrorCode: int32(st.Code()), ErrorMessage: st.Message()}
				}
				<-prev
				out <- resp
				<-slots
			}(prev)
			prev = done
		}
	}
	dispatch := func(req *pb.ProduceRequest) {
		key := req.Topic + "\x00"
		if req.Partition != nil {
			key += strconv.Itoa(int(*req.Partition))
		}
		lanesMu.Lock()
		defer lanesMu.Unlock()
		ch, ok := lanes[key]
		if !ok {
			ch = make(chan *pb.ProduceRequest, streamInflight)
			lanes[key] = ch
			prev, ok := tails[key]
			if ok {
				delete(tails, key)
			} else {
				c := make(chan struct{})
				close(c)
				prev = c
			}
			lanesWG.Add(1)
			go work(key, ch, prev)
		}
		ch <- req // never blocks: at most streamInflight requests are admitted
	}

	recvd := make(chan *pb.ProduceRequest)
	recvErr := make(chan error, 1)
	go func() {
		for {
			req, err := stream.Recv()
			if err != nil {
				recvErr <- err
				close(recvd)
				return
			}
			select {
			case recvd <- req:
			case <-ctx.Done():
				recvErr <- ctx.Err()
				close(recvd)
				return
			}
		}
	}()

	var result error
loop:
	for {
		select {
		case req, ok := <-recvd:
			if !ok {
				if err := <-recvErr; !errors.Is(err, io.EOF) {
					result = err
				}
				break loop
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				result = ctx.Err()
				break loop
			}
			dispatch(req)
		case <-s.shutdown:
			result = toStatus(errShuttingDown)
			break loop
		case err := <-sendErr:
			result = err
			break loop
		}
	}
	// Wait for what was admitted: appends under way complete; requests not
	// yet started are dropped if the client has gone (its context ended).
	lanesWG.Wait()
	close(out)
	sendWG.Wait()
	if result != nil {
		return toStatus(result)
	}
	return nil
}
