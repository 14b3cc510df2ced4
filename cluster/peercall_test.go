package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
)

// peerNode starts a node that bootstraps a cluster of its own, with
// cluster id clusterID, and serves the peer service. Two nodes started
// with the same id accept each other's calls (the transport checks the
// id, nothing else), which is all a call between them needs.
func peerNode(t *testing.T, id, clusterID string) *Cluster {
	t.Helper()
	dir := t.TempDir()
	if err := writeClusterID(dir, clusterID); err != nil {
		t.Fatal(err)
	}
	db, err := pebble.Open(filepath.Join(dir, "meta"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	topics, err := partition.Open(partition.Options{DataDir: dir, DB: db,
		LogOptions: func(partition.TopicConfig) log.Options { return log.Options{ManualHighWatermark: true} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topics.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(Config{NodeID: id, RaftListener: ln, Bootstrap: true},
		Options{DataDir: dir, DB: db, Topics: topics, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Run(meta.Node{APIAddr: "127.0.0.1:1"})
	return c
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type echo struct {
	Principal string `json:"principal"`
	Text      string `json:"text"`
	Forwarded bool   `json:"forwarded"`
}

// A call carries its body and the principal as data to the handler, whose
// context is marked forwarded, and brings the answer back.
func TestPeerCallCarriesPrincipalAndAnswer(t *testing.T) {
	n1 := peerNode(t, "n1", "c1")
	n1.Handle("echo", func(ctx context.Context, call PeerCall) (any, error) {
		var in echo
		if err := json.Unmarshal(call.Body, &in); err != nil {
			return nil, err
		}
		return echo{Principal: call.Principal, Text: in.Text, Forwarded: Forwarded(ctx)}, nil
	})
	var out echo
	if err := n1.Call(callCtx(t), n1.RaftAddr(), "echo", "User:alice", echo{Text: "hi"}, &out); err != nil {
		t.Fatal(err)
	}
	if out != (echo{Principal: "User:alice", Text: "hi", Forwarded: true}) {
		t.Fatalf("answer %+v", out)
	}
	// Status is answered by the package itself.
	st, err := n1.peerStatus(callCtx(t), n1.RaftAddr())
	if err != nil || st.Self != "n1" {
		t.Fatalf("status %+v, %v", st, err)
	}
}

// An error keeps its kind across a call: the sentinels of this package's
// table, a not-leader answer (naming its leader), an offset out of range
// with its bounds, the core's own kinds (PeerError); an op nobody
// registered is unavailable (retry), not a failure of the request.
func TestPeerCallErrorKinds(t *testing.T) {
	n1 := peerNode(t, "n1", "c1")
	var answer atomic.Pointer[error]
	n1.Handle("fail", func(context.Context, PeerCall) (any, error) { return nil, *answer.Load() })
	leader := meta.Node{ID: "n9", APIAddr: "h:1"} // no Raft address: not followed
	for _, tc := range []struct {
		err  error
		want error
	}{
		{partition.ErrTopicExists, partition.ErrTopicExists},
		{kind.Errorf(partition.ErrTopicNotFound, "no topic t"), partition.ErrTopicNotFound},
		{partition.ErrInvalidConfig, partition.ErrInvalidConfig},
		{kind.Errorf(kind.ErrInvalidArgument, "bad"), kind.ErrInvalidArgument},
		{kind.Errorf(kind.ErrFailedPrecondition, "alone"), kind.ErrFailedPrecondition},
		{kind.ErrShuttingDown, kind.ErrShuttingDown},
		{ErrUnknownNode, ErrUnknownNode},
		{kind.Errorf(ErrTopicNotReady, "partition 2 has no leader"), ErrTopicNotReady},
		{context.DeadlineExceeded, context.DeadlineExceeded},
		{&log.OutOfRangeError{Offset: 9, StartOffset: 2, HighWatermark: 5}, log.ErrOffsetOutOfRange},
		{&NotLeaderError{What: "partition t/0", Leader: leader, Untouched: true}, nil},
		{&PeerError{Kind: "denied", Message: "auth: alice may not"}, nil},
		{errors.New("disk on fire"), kind.ErrUnavailable},
	} {
		answer.Store(&tc.err)
		got := n1.Call(callCtx(t), n1.RaftAddr(), "fail", "", nil, nil)
		if got == nil || got.Error() != tc.err.Error() {
			t.Fatalf("%v came back as %v: want its message", tc.err, got)
		}
		var nl *NotLeaderError
		var oor *log.OutOfRangeError
		var pe *PeerError
		switch {
		case errors.As(tc.err, &nl):
			if !errors.As(got, &nl) || nl.Leader != leader || !nl.Untouched || nl.What != "partition t/0" {
				t.Fatalf("not leader came back as %#v", got)
			}
		case errors.As(tc.err, &oor):
			if !errors.As(got, &oor) || *oor != (log.OutOfRangeError{Offset: 9, StartOffset: 2, HighWatermark: 5}) {
				t.Fatalf("out of range came back as %#v", got)
			}
		case errors.As(tc.err, &pe):
			if !errors.As(got, &pe) || pe.Kind != "denied" {
				t.Fatalf("the core's kind came back as %#v", got)
			}
		default:
			if !errors.Is(got, tc.want) {
				t.Fatalf("%v came back as %v, want kind %v", tc.err, got, tc.want)
			}
		}
	}
	err := n1.Call(callCtx(t), n1.RaftAddr(), "nobody-serves-this", "", nil, nil)
	if !errors.Is(err, kind.ErrUnavailable) || !strings.Contains(err.Error(), "nobody-serves-this") {
		t.Fatalf("an op not registered: %v", err)
	}
}

// A "not leader" answer that left the request untouched is followed to the
// leader it names, at most maxPeerHops times; one that touched it is not.
func TestPeerCallFollowsNotLeader(t *testing.T) {
	n1, n2 := peerNode(t, "n1", "c1"), peerNode(t, "n2", "c1")
	var calls1, calls2 atomic.Int32
	n1.Handle("w", func(context.Context, PeerCall) (any, error) {
		calls1.Add(1)
		return nil, &NotLeaderError{What: metaWhat, Leader: meta.Node{ID: "n2", RaftAddr: n2.RaftAddr()}, Untouched: true}
	})
	n2.Handle("w", func(_ context.Context, call PeerCall) (any, error) {
		calls2.Add(1)
		return "done by n2 for " + call.Principal, nil
	})
	var out string
	if err := n1.Call(callCtx(t), n1.RaftAddr(), "w", "User:bob", nil, &out); err != nil || out != "done by n2 for User:bob" {
		t.Fatalf("followed: %q, %v", out, err)
	}
	if calls1.Load() != 1 || calls2.Load() != 1 {
		t.Fatalf("calls: n1 %d, n2 %d; want 1 each", calls1.Load(), calls2.Load())
	}

	// Two nodes naming each other: the caller stops after maxPeerHops.
	calls1.Store(0)
	n2.Handle("loop", func(context.Context, PeerCall) (any, error) {
		calls2.Add(1)
		return nil, &NotLeaderError{What: metaWhat, Leader: meta.Node{ID: "n1", RaftAddr: n1.RaftAddr()}, Untouched: true}
	})
	n1.Handle("loop", func(context.Context, PeerCall) (any, error) {
		calls1.Add(1)
		return nil, &NotLeaderError{What: metaWhat, Leader: meta.Node{ID: "n2", RaftAddr: n2.RaftAddr()}, Untouched: true}
	})
	calls2.Store(0)
	var nl *NotLeaderError
	if err := n1.Call(callCtx(t), n1.RaftAddr(), "loop", "", nil, nil); !errors.As(err, &nl) {
		t.Fatalf("a loop ended with %v, want the last not-leader answer", err)
	}
	if got := calls1.Load() + calls2.Load(); got != maxPeerHops+1 {
		t.Fatalf("a loop made %d calls, want %d", got, maxPeerHops+1)
	}

	// Touched: the request may have had an effect; it is not sent again.
	calls2.Store(0)
	n1.Handle("touched", func(context.Context, PeerCall) (any, error) {
		return nil, &NotLeaderError{What: metaWhat, Leader: meta.Node{ID: "n2", RaftAddr: n2.RaftAddr()}}
	})
	n2.Handle("touched", func(context.Context, PeerCall) (any, error) { calls2.Add(1); return nil, nil })
	if err := n1.Call(callCtx(t), n1.RaftAddr(), "touched", "", nil, nil); !errors.As(err, &nl) || nl.Untouched {
		t.Fatalf("touched: %v", err)
	}
	if calls2.Load() != 0 {
		t.Fatal("a request that was touched was sent on")
	}
}

// Only a node of this cluster can call: a node of another cluster is
// refused by the transport before any handler runs.
func TestPeerCallFromAnotherClusterRefused(t *testing.T) {
	n1, other := peerNode(t, "n1", "c1"), peerNode(t, "n2", "c2")
	var ran atomic.Bool
	n1.Handle("delete-everything", func(context.Context, PeerCall) (any, error) { ran.Store(true); return nil, nil })
	err := other.Call(callCtx(t), n1.RaftAddr(), "delete-everything", "User:admin", nil, nil)
	if err == nil || ran.Load() {
		t.Fatalf("a node of another cluster called: %v (ran %v)", err, ran.Load())
	}
}

// A request or an answer beyond maxPeerFrame is refused with an error that
// says so, and the handler of a request too large never runs.
func TestPeerCallFrameTooLarge(t *testing.T) {
	n1 := peerNode(t, "n1", "c1")
	var ran atomic.Bool
	n1.Handle("big", func(_ context.Context, call PeerCall) (any, error) {
		ran.Store(true)
		if string(call.Body) == `"answer big"` {
			return strings.Repeat("x", maxPeerFrame), nil
		}
		return nil, nil
	})
	err := n1.Call(callCtx(t), n1.RaftAddr(), "big", "", strings.Repeat("x", maxPeerFrame), nil)
	if !errors.Is(err, kind.ErrInvalidArgument) || !strings.Contains(err.Error(), "more than the") || ran.Load() {
		t.Fatalf("a request too large: %v (handler ran: %v)", err, ran.Load())
	}
	err = n1.Call(callCtx(t), n1.RaftAddr(), "big", "", "answer big", nil)
	if !errors.Is(err, kind.ErrInvalidArgument) || !strings.Contains(err.Error(), "more than the") {
		t.Fatalf("an answer too large: %v", err)
	}
}

// A call whose caller already gave up is not sent: sent anyway, a write
// could be applied after the caller's next one and undo it.
func TestPeerCallAbandonedIsNotSent(t *testing.T) {
	n1, n2 := peerNode(t, "n1", "c1"), peerNode(t, "n2", "c1")
	var ran atomic.Int32
	n1.Handle("commit", func(context.Context, PeerCall) (any, error) { ran.Add(1); return nil, nil })
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 {
		if err := n2.Call(gone, n1.RaftAddr(), "commit", "User:alice", nil, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("a call whose caller gave up answered %v", err)
		}
	}
	// A live call after them runs, so the handler could have been reached.
	if err := n2.Call(callCtx(t), n1.RaftAddr(), "commit", "User:alice", nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want only the live call's", n)
	}
}

// A caller that hangs up ends its handler's context: a handler waiting
// (for records, say) stops instead of waiting out the call's timeout.
func TestPeerCallHangUpEndsHandler(t *testing.T) {
	n1, n2 := peerNode(t, "n1", "c1"), peerNode(t, "n2", "c1")
	started, ended := make(chan struct{}), make(chan struct{})
	n1.Handle("wait", func(ctx context.Context, _ PeerCall) (any, error) {
		close(started)
		<-ctx.Done()
		close(ended)
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- n2.Call(ctx, n1.RaftAddr(), "wait", "", nil, nil) }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the call answered %v", err)
	}
	select {
	case <-ended:
	case <-time.After(20 * time.Second): // the call's own timeout is 40 s
		t.Fatal("the handler still waits after its caller hung up")
	}
}
