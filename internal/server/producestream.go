package server

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"

	"google.golang.org/grpc/status"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
	pb "github.com/logd/logd/proto/logd/v1"
)

// streamInflight bounds the requests one ProduceStream may have in flight;
// past it the server stops reading the stream (backpressure through gRPC
// flow control) instead of buffering.
const streamInflight = 64

// ProduceStream pipelines produce requests. Requests for one partition are
// appended in the order they arrive and answered in that order (lanes);
// different partitions proceed in parallel. A failed request is answered
// with its error, the stream goes on.
func (s *Server) ProduceStream(stream pb.Log_ProduceStreamServer) error {
	select {
	case <-s.b.Done():
		return kind.ErrShuttingDown
	default:
	}
	ctx := stream.Context()
	snd := startSender(stream)
	ls := broker.NewLanes(streamInflight)
	recvd, recvErr := receive(ctx, stream)
	result := s.dispatchStream(ctx, ls, snd.out, snd.err, recvd, recvErr)
	// Wait for what was admitted: appends under way complete; requests not
	// yet started are dropped if the client has gone (its context ended).
	ls.Wait()
	snd.close()
	return result
}

// dispatchStream admits and dispatches the stream's requests until it
// ends: the client's EOF (nil), a receive or send error, the client gone,
// or the broker shutting down.
func (s *Server) dispatchStream(ctx context.Context, ls *broker.Lanes, out chan<- *pb.ProduceResponse, sendErr <-chan error,
	recvd <-chan *pb.ProduceRequest, recvErr <-chan error) error {
	for {
		select {
		case req, ok := <-recvd:
			if !ok {
				if err := <-recvErr; !errors.Is(err, io.EOF) {
					return err
				}
				return nil
			}
			if err := ls.Admit(ctx); err != nil {
				return err
			}
			ls.Dispatch(laneKey(req), &produceJob{s: s, ctx: ctx, req: req, out: out})
		case <-s.b.Done():
			return kind.ErrShuttingDown
		case err := <-sendErr:
			return err
		}
	}
}

// laneKey is a request's lane: its topic and partition.
func laneKey(req *pb.ProduceRequest) string {
	key := req.Topic + "\x00"
	if req.Partition != nil {
		key += strconv.Itoa(int(*req.Partition))
	}
	return key
}

// produceJob is a request as a lane runs it: started in order on the lane
// (a single batch's write through broker.StartProduce; any other request
// is done there), waited for in parallel, answered (sent to out) in order.
type produceJob struct {
	s   *Server
	ctx context.Context
	req *pb.ProduceRequest
	out chan<- *pb.ProduceResponse
	// f is the batch's produce, started; nil when resp and err were
	// final at start.
	f    broker.ProduceFuture
	resp *pb.ProduceResponse
	err  error
}

func (j *produceJob) Start() {
	req := j.req
	if len(req.Batch) == 0 || len(req.Records) > 0 || req.Partition == nil {
		j.resp, j.err = j.s.produce(j.ctx, req)
		return
	}
	j.f, j.err = j.s.b.StartProduce(j.ctx, broker.ProduceRequest{Principal: principal(j.ctx), Topic: req.Topic,
		Partition: *req.Partition, Batch: req.Batch, Acks: acksOf(req.Acks)})
}

func (j *produceJob) Wait() {
	if j.f != nil {
		res, err := j.f.Wait()
		j.err = err
		if err == nil {
			j.resp = &pb.ProduceResponse{RequestId: j.req.RequestId, Topic: j.req.Topic,
				Appends: []*pb.PartitionAppend{partitionAppend(*j.req.Partition, res)}}
		}
	}
	if j.err != nil {
		st := status.Convert(toStatus(j.err))
		j.s.m.produceErrors.WithLabelValues(st.Code().String()).Inc()
		j.resp = &pb.ProduceResponse{RequestId: j.req.RequestId, Topic: j.req.Topic,
			ErrorCode: int32(st.Code()), ErrorMessage: st.Message()}
	}
}

func (j *produceJob) Deliver() { j.out <- j.resp }

// receive reads the stream's requests into a channel, closed (with the
// error on recvErr) when the stream or ctx ends.
func receive(ctx context.Context, stream pb.Log_ProduceStreamServer) (<-chan *pb.ProduceRequest, <-chan error) {
	recvd := make(chan *pb.ProduceRequest)
	recvErr := make(chan error, 1)
	go func() {
		defer close(recvd)
		for {
			req, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case recvd <- req:
			case <-ctx.Done():
				recvErr <- ctx.Err()
				return
			}
		}
	}()
	return recvd, recvErr
}

// sender sends a stream's answers in the order they are queued on out.
// After a failed Send it drains out, so lanes never block, and reports the
// error once on err.
type sender struct {
	out chan *pb.ProduceResponse
	err chan error
	wg  sync.WaitGroup
}

func startSender(stream pb.Log_ProduceStreamServer) *sender {
	s := &sender{out: make(chan *pb.ProduceResponse, streamInflight), err: make(chan error, 1)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for r := range s.out {
			if err := stream.Send(r); err != nil {
				s.err <- err
				for range s.out {
				}
				return
			}
		}
	}()
	return s
}

// close ends the sender once every answer was queued, and waits for it.
func (s *sender) close() {
	close(s.out)
	s.wg.Wait()
}
