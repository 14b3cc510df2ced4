package server

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"

	"google.golang.org/grpc/status"

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
		return toStatus(kind.ErrShuttingDown)
	default:
	}
	ctx := stream.Context()
	snd := startSender(stream)
	ls := newLanes(streamInflight)
	recvd, recvErr := receive(ctx, stream)
	result := s.dispatchStream(ctx, ls, snd.out, snd.err, recvd, recvErr)
	// Wait for what was admitted: appends under way complete; requests not
	// yet started are dropped if the client has gone (its context ended).
	ls.wait()
	snd.close()
	return toStatus(result)
}

// dispatchStream admits and dispatches the stream's requests until it
// ends: the client's EOF (nil), a receive or send error, the client gone,
// or the broker shutting down.
func (s *Server) dispatchStream(ctx context.Context, ls *lanes, out chan<- *pb.ProduceResponse, sendErr <-chan error,
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
			if err := ls.admit(ctx); err != nil {
				return err
			}
			ls.dispatch(laneKey(req), s.produceJob(ctx, req, out))
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

// produceJob is a request as a lane runs it: started in order on the lane,
// waited for in parallel, answered (sent to out) in order.
func (s *Server) produceJob(ctx context.Context, req *pb.ProduceRequest, out chan<- *pb.ProduceResponse) laneJob {
	return func() func() func() {
		finish := s.startProduce(ctx, req)
		return func() func() {
			resp, err := finish()
			if err != nil {
				st := status.Convert(toStatus(err))
				s.m.produceErrors.WithLabelValues(st.Code().String()).Inc()
				resp = &pb.ProduceResponse{RequestId: req.RequestId, Topic: req.Topic,
					ErrorCode: int32(st.Code()), ErrorMessage: st.Message()}
			}
			return func() { out <- resp }
		}
	}
}

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
