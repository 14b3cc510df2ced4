package replication

import (
	"errors"
	"testing"
	"time"

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
