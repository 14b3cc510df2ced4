package client

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// fakeServer is an in-memory logd node for the client's tests: topics,
// partitions holding batches, the idempotent-producer rules of the server
// contract, consumer offsets, and hooks that inject failures.
type fakeServer struct {
	logdv1.UnimplementedLogServer
	logdv1.UnimplementedAdminServer
	logdv1.UnimplementedOffsetsServer

	addr string
	gs   *grpc.Server

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every append
	topics  map[string][]*fakePartition
	groups  map[string]map[string]map[int32]int64
	// leader, when set, makes every call fail as "not leader" naming it.
	leader string
	// beforeAppend fails a produce before anything is appended.
	beforeAppend func(req *logdv1.ProduceRequest) error
	// afterAppend fails a produce after its batch was appended (the answer
	// is lost, as on a timeout).
	afterAppend func(req *logdv1.ProduceRequest) error
	// gate, when set, holds every produce until it is closed.
	gate     chan struct{}
	produces int // produce requests that appended a batch
	fenced   int // produce requests refused for an older epoch
	// streamFails, when set, makes ProduceStream fail with it on its first
	// request, before producing anything.
	streamFails error
	// streamReceived counts the requests ProduceStream received.
	streamReceived int
	// setupDelay delays the answer to CreateTopic and AlterTopic, as a
	// cluster waiting for new partitions' leaders.
	setupDelay time.Duration
}

type fakePartition struct {
	batches   [][]byte // stored, base offsets assigned
	hw        int64
	logStart  int64
	producers map[int64]*fakeProducerState
}

type fakeProducerState struct {
	epoch   int16
	lastSeq int32
	recent  []fakeRecent // last 5 batches
}

type fakeRecent struct {
	first, lastSeq int32 // sequences
	base, last     int64 // offsets
}

func startFake(t testing.TB) *fakeServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{
		addr: lis.Addr().String(), gs: grpc.NewServer(), changed: make(chan struct{}),
		topics: make(map[string][]*fakePartition), groups: make(map[string]map[string]map[int32]int64),
	}
	logdv1.RegisterLogServer(f.gs, f)
	logdv1.RegisterAdminServer(f.gs, f)
	logdv1.RegisterOffsetsServer(f.gs, f)
	go f.gs.Serve(lis)
	t.Cleanup(f.gs.Stop)
	return f
}

func (f *fakeServer) createTopic(name string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps := make([]*fakePartition, n)
	for i := range ps {
		ps[i] = &fakePartition{producers: make(map[int64]*fakeProducerState)}
	}
	f.topics[name] = ps
}

func (f *fakeServer) notLeader() error {
	if f.leader == "" {
		return nil
	}
	st, _ := status.New(codes.Unavailable, "not the leader").WithDetails(&errdetails.ErrorInfo{
		Reason: "NOT_LEADER", Domain: "logd", Metadata: map[string]string{"leader": f.leader},
	})
	return st.Err()
}

// records returns every record of a partition, in offset order.
func (f *fakeServer) records(t testing.TB, topic string, p int32) []batch.Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []batch.Record
	for _, b := range f.topics[topic][p].batches {
		_, recs, err := batch.Decode(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

func (f *fakeServer) part(topic string, p int32) (*fakePartition, error) {
	ps, ok := f.topics[topic]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "topic %q not found", topic)
	}
	if p < 0 || int(p) >= len(ps) {
		return nil, status.Errorf(codes.NotFound, "partition %d of %q not found", p, topic)
	}
	return ps[p], nil
}

func (f *fakeServer) Produce(ctx context.Context, req *logdv1.ProduceRequest) (*logdv1.ProduceResponse, error) {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.notLeader(); err != nil {
		return nil, err
	}
	if f.beforeAppend != nil {
		if err := f.beforeAppend(req); err != nil {
			return nil, err
		}
	}
	p, err := f.part(req.GetTopic(), req.GetPartition())
	if err != nil {
		return nil, err
	}
	info, err := batch.Verify(req.GetBatch())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "bad batch: %v", err)
	}
	app := &logdv1.PartitionAppend{Partition: req.GetPartition()}
	// The server's rules (partition.Append): a known producer's batch is a
	// duplicate when it is one of the last 5 batches (same sequences) or
	// older, appended when it comes next, refused otherwise; an unknown
	// producer is accepted at any sequence.
	ps := p.producers[info.ProducerID]
	first, last := info.FirstSequence, info.FirstSequence+info.NumRecords-1
	switch {
	case ps != nil && info.ProducerEpoch < ps.epoch:
		f.fenced++
		return nil, status.Errorf(codes.FailedPrecondition, "out of order sequence: epoch %d is older than epoch %d", info.ProducerEpoch, ps.epoch)
	case ps != nil && info.ProducerEpoch > ps.epoch:
		// A new epoch restarts the sequences (KIP-360).
		if first != 0 {
			return nil, status.Errorf(codes.FailedPrecondition, "out of order sequence: epoch %d starts at %d, want 0", info.ProducerEpoch, first)
		}
		ps = nil
	}
	if ps != nil {
		for _, r := range ps.recent {
			if r.first == first && r.lastSeq == last {
				app.BaseOffset, app.LastOffset, app.Duplicate = r.base, r.last, true
				return &logdv1.ProduceResponse{RequestId: req.GetRequestId(), Topic: req.GetTopic(), Appends: []*logdv1.PartitionAppend{app}}, nil
			}
		}
		if first <= ps.lastSeq {
			app.BaseOffset, app.LastOffset, app.Duplicate = -1, -1, true
			return &logdv1.ProduceResponse{RequestId: req.GetRequestId(), Topic: req.GetTopic(), Appends: []*logdv1.PartitionAppend{app}}, nil
		}
		if first != ps.lastSeq+1 {
			return nil, status.Errorf(codes.FailedPrecondition, "out of order sequence: got %d, want %d", first, ps.lastSeq+1)
		}
	} else {
		ps = &fakeProducerState{epoch: info.ProducerEpoch}
		p.producers[info.ProducerID] = ps
	}
	stored := bytes.Clone(req.GetBatch())
	batch.SetBaseOffset(stored, p.hw)
	p.batches = append(p.batches, stored)
	app.BaseOffset, app.LastOffset = p.hw, p.hw+int64(info.NumRecords)-1
	p.hw += int64(info.NumRecords)
	ps.lastSeq = last
	ps.recent = append(ps.recent, fakeRecent{first: first, lastSeq: last, base: app.BaseOffset, last: app.LastOffset})
	if len(ps.recent) > 5 {
		ps.recent = ps.recent[1:]
	}
	f.produces++
	close(f.changed)
	f.changed = make(chan struct{})
	if f.afterAppend != nil {
		if err := f.afterAppend(req); err != nil {
			return nil, err
		}
	}
	return &logdv1.ProduceResponse{RequestId: req.GetRequestId(), Topic: req.GetTopic(), Appends: []*logdv1.PartitionAppend{app}}, nil
}

// ProduceStream appends each partition's requests in the order they arrive
// (a lane per partition, as the server does); partitions go in parallel.
func (f *fakeServer) ProduceStream(stream logdv1.Log_ProduceStreamServer) error {
	var mu sync.Mutex // Send is not safe for concurrent use
	var wg sync.WaitGroup
	lanes := map[string]chan *logdv1.ProduceRequest{}
	defer func() {
		for _, ch := range lanes {
			close(ch)
		}
		wg.Wait()
	}()
	lane := func(ch chan *logdv1.ProduceRequest) {
		defer wg.Done()
		for req := range ch {
			resp, err := f.Produce(stream.Context(), req)
			if err != nil {
				st := status.Convert(err)
				resp = &logdv1.ProduceResponse{RequestId: req.GetRequestId(), Topic: req.GetTopic(),
					ErrorCode: int32(st.Code()), ErrorMessage: st.Message()}
			}
			mu.Lock()
			stream.Send(resp)
			mu.Unlock()
		}
	}
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		f.mu.Lock()
		fail := f.streamFails
		f.streamReceived++
		f.mu.Unlock()
		if fail != nil {
			return fail
		}
		key := req.GetTopic() + "\x00" + strconv.Itoa(int(req.GetPartition()))
		ch, ok := lanes[key]
		if !ok {
			ch = make(chan *logdv1.ProduceRequest, 1024)
			lanes[key] = ch
			wg.Add(1)
			go lane(ch)
		}
		ch <- req
	}
}

func (f *fakeServer) Fetch(ctx context.Context, req *logdv1.FetchRequest) (*logdv1.FetchResponse, error) {
	deadline := time.Now().Add(time.Duration(req.GetMaxWaitMs()) * time.Millisecond)
	for {
		f.mu.Lock()
		if err := f.notLeader(); err != nil {
			f.mu.Unlock()
			return nil, err
		}
		p, err := f.part(req.GetTopic(), req.GetPartition())
		if err != nil {
			f.mu.Unlock()
			return nil, err
		}
		if req.GetOffset() < p.logStart || req.GetOffset() > p.hw {
			st, _ := status.New(codes.OutOfRange, "offset out of range").WithDetails(&errdetails.ErrorInfo{
				Reason: "OFFSET_OUT_OF_RANGE", Domain: "logd", Metadata: map[string]string{
					"log_start_offset": strconv.FormatInt(p.logStart, 10),
					"high_watermark":   strconv.FormatInt(p.hw, 10),
				}})
			f.mu.Unlock()
			return nil, st.Err()
		}
		resp := &logdv1.FetchResponse{Topic: req.GetTopic(), Partition: req.GetPartition(),
			LogStartOffset: p.logStart, HighWatermark: p.hw, NextOffset: req.GetOffset()}
		for _, b := range p.batches {
			info, _ := batch.ParseHeader(b)
			if info.LastOffset() < req.GetOffset() {
				continue
			}
			if len(resp.Batches) > 0 && req.GetMaxBytes() > 0 && len(resp.Batches)+len(b) > int(req.GetMaxBytes()) {
				break
			}
			resp.Batches = append(resp.Batches, b...)
			resp.NextOffset = info.NextOffset()
		}
		changed := f.changed
		f.mu.Unlock()
		wait := time.Until(deadline)
		if len(resp.Batches) > 0 || wait <= 0 {
			return resp, nil
		}
		select {
		case <-changed:
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

func (f *fakeServer) ListOffsets(ctx context.Context, req *logdv1.ListOffsetsRequest) (*logdv1.ListOffsetsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.notLeader(); err != nil {
		return nil, err
	}
	ps, ok := f.topics[req.GetTopic()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "topic %q not found", req.GetTopic())
	}
	parts := req.GetPartitions()
	if len(parts) == 0 {
		for i := range ps {
			parts = append(parts, int32(i))
		}
	}
	resp := &logdv1.ListOffsetsResponse{Topic: req.GetTopic()}
	for _, i := range parts {
		p, err := f.part(req.GetTopic(), i)
		if err != nil {
			return nil, err
		}
		po := &logdv1.PartitionOffset{Partition: i, LogStartOffset: p.logStart, HighWatermark: p.hw}
		switch req.GetSpec() {
		case logdv1.OffsetSpec_OFFSET_SPEC_EARLIEST:
			po.Offset = p.logStart
		case logdv1.OffsetSpec_OFFSET_SPEC_LATEST:
			po.Offset = p.hw
		case logdv1.OffsetSpec_OFFSET_SPEC_TIMESTAMP:
			po.Offset = p.hw
		search:
			for _, b := range p.batches {
				_, recs, _ := batch.Decode(b, p.logStart)
				for _, r := range recs {
					if r.Timestamp >= req.GetTimestampMs() {
						po.Offset = r.Offset
						break search
					}
				}
			}
		}
		resp.Partitions = append(resp.Partitions, po)
	}
	return resp, nil
}

func (f *fakeServer) DescribeTopic(ctx context.Context, req *logdv1.DescribeTopicRequest) (*logdv1.DescribeTopicResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.notLeader(); err != nil {
		return nil, err
	}
	ps, ok := f.topics[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "topic %q not found", req.GetName())
	}
	resp := &logdv1.DescribeTopicResponse{Topic: &logdv1.TopicInfo{Name: req.GetName(), Partitions: int32(len(ps)), Replicas: 1, Config: &logdv1.TopicConfig{}}}
	for i, p := range ps {
		resp.Partitions = append(resp.Partitions, &logdv1.PartitionInfo{Partition: int32(i), LogStartOffset: p.logStart, HighWatermark: p.hw, Segments: 1})
	}
	return resp, nil
}

// ListTopics answers two topics a page, in name order, so the client must
// follow page tokens.
func (f *fakeServer) ListTopics(ctx context.Context, req *logdv1.ListTopicsRequest) (*logdv1.ListTopicsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := slices.Sorted(maps.Keys(f.topics))
	i := 0
	for i < len(names) && names[i] <= req.GetPageToken() {
		i++
	}
	resp := &logdv1.ListTopicsResponse{}
	for _, n := range names[i:min(i+2, len(names))] {
		resp.Topics = append(resp.Topics, &logdv1.TopicInfo{Name: n, Partitions: int32(len(f.topics[n])), Replicas: 1})
	}
	if i+2 < len(names) {
		resp.NextPageToken = names[i+1]
	}
	return resp, nil
}

func (f *fakeServer) CreateTopic(ctx context.Context, req *logdv1.CreateTopicRequest) (*logdv1.CreateTopicResponse, error) {
	if err := f.notLeader(); err != nil {
		return nil, err
	}
	n := max(int(req.GetPartitions()), 1)
	f.createTopic(req.GetName(), n)
	f.mu.Lock()
	delay := f.setupDelay
	f.mu.Unlock()
	time.Sleep(delay)
	return &logdv1.CreateTopicResponse{Topic: &logdv1.TopicInfo{Name: req.GetName(), Partitions: int32(n), Replicas: 1, Config: req.GetConfig()}}, nil
}

func (f *fakeServer) CommitOffsets(ctx context.Context, req *logdv1.CommitOffsetsRequest) (*logdv1.CommitOffsetsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.groups[req.GetGroup()]
	if g == nil {
		g = make(map[string]map[int32]int64)
		f.groups[req.GetGroup()] = g
	}
	for _, o := range req.GetOffsets() {
		if g[o.GetTopic()] == nil {
			g[o.GetTopic()] = make(map[int32]int64)
		}
		g[o.GetTopic()][o.GetPartition()] = o.GetOffset()
	}
	return &logdv1.CommitOffsetsResponse{}, nil
}

func (f *fakeServer) FetchOffsets(ctx context.Context, req *logdv1.FetchOffsetsRequest) (*logdv1.FetchOffsetsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &logdv1.FetchOffsetsResponse{Group: req.GetGroup()}
	for topic, offs := range f.groups[req.GetGroup()] {
		if req.GetTopic() != "" && topic != req.GetTopic() {
			continue
		}
		for p, off := range offs {
			resp.Offsets = append(resp.Offsets, &logdv1.CommittedOffset{Topic: topic, Partition: p, Offset: off})
		}
	}
	return resp, nil
}

// committed returns group's committed offset of topic/p, or -1.
func (f *fakeServer) committed(group, topic string, p int32) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	off, ok := f.groups[group][topic][p]
	if !ok {
		return -1
	}
	return off
}
