package replication

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// future is a raft.Future answered when answer is sent on, or never.
type future struct{ answer chan error }

func (f future) Error() error { return <-f.answer }

// Await returns Raft's answer, and once the instance has shut down
// without answering, raft.ErrRaftShutdown instead of waiting for good.
func TestAwait(t *testing.T) {
	answered := errors.New("answered")
	t.Run("answered", func(t *testing.T) {
		f := future{make(chan error, 1)}
		f.answer <- answered
		if err := Await(f, make(chan struct{})); err != answered {
			t.Fatalf("got %v, want Raft's answer", err)
		}
	})
	t.Run("answered before the shutdown", func(t *testing.T) {
		f, down := future{make(chan error, 1)}, make(chan struct{})
		f.answer <- answered
		close(down)
		if err := Await(f, down); err != answered {
			t.Fatalf("got %v, want Raft's answer", err)
		}
	})
	t.Run("never answered", func(t *testing.T) {
		f, down := future{make(chan error)}, make(chan struct{})
		time.AfterFunc(50*time.Millisecond, func() { close(down) })
		start := time.Now()
		if err := Await(f, down); !errors.Is(err, raft.ErrRaftShutdown) {
			t.Fatalf("got %v, want raft.ErrRaftShutdown", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("returned after %v", d)
		}
		f.answer <- nil // ends Await's goroutine
	})
}

// watch calls back once with Raft's answer, and fails what Raft never
// answers once the instance has shut down, including a watch begun after
// the shutdown; one goroutine per watched future, none left for answered
// ones.
func TestWatch(t *testing.T) {
	conf := raft.DefaultConfig()
	conf.LocalID = "n1"
	conf.Logger = hclog.NewNullLogger()
	_, trans := raft.NewInmemTransport("n1")
	r, err := raft.NewRaft(conf, nopFSM{}, raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		t.Fatal(err)
	}
	in := newInstance(r)
	answered := errors.New("answered")
	type call struct{ err error }
	watch := func(f future) <-chan call {
		c := make(chan call, 2)
		in.watch(f, func(err error) { c <- call{err} })
		return c
	}
	got := func(c <-chan call, want error, what string) {
		t.Helper()
		select {
		case r := <-c:
			if !errors.Is(r.err, want) {
				t.Fatalf("%s: called with %v, want %v", what, r.err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not called after 10s", what)
		}
		select {
		case r := <-c:
			t.Fatalf("%s: called a second time, with %v", what, r.err)
		case <-time.After(2 * lateAnswer):
		}
	}

	ok := future{make(chan error, 1)}
	ok.answer <- answered
	got(watch(ok), answered, "answered")

	never := future{make(chan error)}
	late := future{make(chan error, 1)}
	cNever, cLate := watch(never), watch(late)
	in.mu.Lock()
	n := len(in.watched)
	in.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d futures watched, want the 2 unanswered", n)
	}
	if err := in.shutdown(); err != nil {
		t.Fatal(err)
	}
	late.answer <- answered // within lateAnswer of the shutdown: still Raft's answer
	got(cLate, answered, "answered just after the shutdown")
	got(cNever, raft.ErrRaftShutdown, "never answered")

	after := future{make(chan error)}
	got(watch(after), raft.ErrRaftShutdown, "watched after the shutdown")
	never.answer <- nil // ends the goroutines waiting for them
	after.answer <- nil
}
