package client

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// electingAdmin answers CreateTopic with "no leader" fails times, then
// creates the topic.
type electingAdmin struct {
	logdv1.UnimplementedAdminServer
	fails int32
	calls atomic.Int32
	err   error // the answer while failing; default: no leader
	// hang makes every attempt after the first wait for its deadline.
	hang bool
}

func (a *electingAdmin) CreateTopic(ctx context.Context, req *logdv1.CreateTopicRequest) (*logdv1.CreateTopicResponse, error) {
	n := a.calls.Add(1)
	if a.hang && n > 1 {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if n <= a.fails || a.fails < 0 {
		if a.err != nil {
			return nil, a.err
		}
		return nil, status.Error(codes.Unavailable, "the cluster metadata has no leader right now (an election is under way, or too few replicas are up): retry shortly")
	}
	return &logdv1.CreateTopicResponse{Topic: &logdv1.TopicInfo{Name: req.GetName(), Partitions: 1, Replicas: 3}}, nil
}

func startElecting(t *testing.T, a *electingAdmin) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	logdv1.RegisterAdminServer(gs, a)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

func dialT(t *testing.T, addr string, opts ...Option) *Client {
	t.Helper()
	c, err := Dial(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// An admin call rides out an election: it retries UNAVAILABLE with backoff
// and succeeds once a leader answers.
func TestAdminRetriesAnElection(t *testing.T) {
	a := &electingAdmin{fails: 3}
	c := dialT(t, startElecting(t, a))
	ti, err := c.Admin().CreateTopic(context.Background(), "t", TopicOptions{})
	if err != nil || ti.Name != "t" {
		t.Fatalf("CreateTopic: %+v, %v", ti, err)
	}
	if n := a.calls.Load(); n != 4 {
		t.Fatalf("%d attempts, want 4", n)
	}
}

// Past the retry timeout the call fails with the last answer, saying how
// long it retried.
func TestAdminRetryGivesUpAtTheTimeout(t *testing.T) {
	a := &electingAdmin{fails: -1}
	c := dialT(t, startElecting(t, a), WithRetryTimeout(400*time.Millisecond))
	start := time.Now()
	_, err := c.Admin().CreateTopic(context.Background(), "t", TopicOptions{})
	d := time.Since(start)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrNotLeader) || !strings.Contains(err.Error(), "still failing after retrying for") {
		t.Fatalf("err %v", err)
	}
	if d < 200*time.Millisecond || d > 5*time.Second || a.calls.Load() < 3 {
		t.Fatalf("gave up after %v and %d attempts, want about 400ms and several", d, a.calls.Load())
	}
	// A context deadline ends the retries too. The deadline starts once
	// the server and client are up: under load their setup took 40 ms of
	// it, and the second attempt ran into the deadline (DeadlineExceeded,
	// not the server's answer).
	c2 := dialT(t, startElecting(t, &electingAdmin{fails: -1}))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := c2.Admin().CreateTopic(ctx, "t", TopicOptions{}); !errors.Is(err, ErrUnavailable) || time.Since(start) > 2*time.Second {
		t.Fatalf("with a 100ms deadline: %v after %v", err, time.Since(start))
	}
}

// A retry cut off by the caller's deadline (a loaded machine: the server
// did not answer the second attempt in time) fails with the answer that
// made the call retry, not only "deadline exceeded".
func TestAdminRetryCutByTheDeadlineSaysWhy(t *testing.T) {
	c := dialT(t, startElecting(t, &electingAdmin{fails: -1, hang: true}))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.Admin().CreateTopic(ctx, "t", TopicOptions{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no leader right now") {
		t.Fatalf("got %v, want the no-leader answer that made it retry", err)
	}
}

// An answer that will not change is not retried.
func TestAdminDoesNotRetryFinalAnswers(t *testing.T) {
	a := &electingAdmin{fails: -1, err: status.Error(codes.AlreadyExists, `topic "t": topic already exists`)}
	c := dialT(t, startElecting(t, a))
	_, err := c.Admin().CreateTopic(context.Background(), "t", TopicOptions{})
	if !errors.Is(err, ErrTopicExists) || a.calls.Load() != 1 {
		t.Fatalf("%v after %d attempts, want ErrTopicExists after 1", err, a.calls.Load())
	}
}
