package client

import (
	"context"
	"errors"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// produceStream is one ProduceStream to one address, shared by every
// partition whose leader is there. Requests are matched to responses by
// request_id; when the stream breaks, every pending request fails with the
// stream's error (retryable) and the next request opens a new stream.
type produceStream struct {
	streams *streamSet
	addr    string
	cancel  context.CancelFunc

	sendMu sync.Mutex // grpc streams allow one concurrent sender
	stream logdv1.Log_ProduceStreamClient

	mu      sync.Mutex
	pending map[uint64]chan streamResult
	err     error // set once broken
}

type streamResult struct {
	resp *logdv1.ProduceResponse
	err  error
}

// streamSet holds a Producer's streams by address.
type streamSet struct {
	c   *Client
	ctx context.Context // cancelled when the Producer closes
	wg  sync.WaitGroup  // receive loops

	mu   sync.Mutex
	byAt map[string]*produceStream
}

// get returns the open stream to addr, opening one.
func (s *streamSet) get(addr string) (*produceStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ps, ok := s.byAt[addr]; ok {
		return ps, nil
	}
	if err := s.ctx.Err(); err != nil {
		return nil, ErrClosed
	}
	cc, err := s.c.conn(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(s.ctx)
	st, err := logdv1.NewLogClient(cc).ProduceStream(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	ps := &produceStream{streams: s, addr: addr, cancel: cancel, stream: st, pending: make(map[uint64]chan streamResult)}
	if s.byAt == nil {
		s.byAt = make(map[string]*produceStream)
	}
	s.byAt[addr] = ps
	s.wg.Add(1)
	go ps.receive()
	return ps, nil
}

// drop forgets ps if it is still the stream of its address.
func (s *streamSet) drop(ps *produceStream) {
	s.mu.Lock()
	if s.byAt[ps.addr] == ps {
		delete(s.byAt, ps.addr)
	}
	s.mu.Unlock()
}

// close cancels every stream and waits for their receive loops.
func (s *streamSet) close() {
	s.mu.Lock()
	for _, ps := range s.byAt {
		ps.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (ps *produceStream) receive() {
	defer ps.streams.wg.Done()
	for {
		resp, err := ps.stream.Recv()
		if err != nil {
			ps.fail(err)
			return
		}
		ps.mu.Lock()
		ch := ps.pending[resp.GetRequestId()]
		delete(ps.pending, resp.GetRequestId())
		ps.mu.Unlock()
		if ch != nil {
			ch <- streamResult{resp: resp}
		}
	}
}

// fail breaks the stream: pending requests get err, new ones a new stream.
func (ps *produceStream) fail(err error) {
	if errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled {
		err = status.Error(codes.Unavailable, "produce stream closed")
	} else if _, ok := status.FromError(err); !ok {
		err = status.Errorf(codes.Unavailable, "produce stream to %s broke: %v", ps.addr, err)
	}
	ps.streams.drop(ps)
	ps.cancel()
	ps.mu.Lock()
	if ps.err == nil {
		ps.err = err
	}
	pending := ps.pending
	ps.pending = nil
	ps.mu.Unlock()
	for _, ch := range pending {
		ch <- streamResult{err: err}
	}
}

// start sends req and returns where its response will arrive (a response
// carrying an error is delivered as is: see produceError).
func (ps *produceStream) start(req *logdv1.ProduceRequest) (<-chan streamResult, error) {
	ch := make(chan streamResult, 1)
	ps.mu.Lock()
	if ps.err != nil {
		err := ps.err
		ps.mu.Unlock()
		return nil, err
	}
	ps.pending[req.RequestId] = ch
	ps.mu.Unlock()

	ps.sendMu.Lock()
	err := ps.stream.Send(req)
	ps.sendMu.Unlock()
	if err != nil {
		// The receive loop sees the real error and fails everything pending,
		// this request included.
		ps.cancel()
	}
	return ch, nil
}

// forget stops waiting for request id's response (it timed out).
func (ps *produceStream) forget(id uint64) {
	ps.mu.Lock()
	delete(ps.pending, id)
	ps.mu.Unlock()
}
