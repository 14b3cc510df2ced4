package client

import (
	"math"
	"testing"
)

// A KV writer is lent to one call at a time: two calls at once get two
// ids; a writer given back comes out again at its next epoch, and past
// the largest epoch as a new id at epoch 0.
func TestKVWritersLendOneCallAtATime(t *testing.T) {
	var ws kvWriters
	a, b := ws.take(), ws.take()
	if a.id == b.id || a.epoch != 0 || b.epoch != 0 {
		t.Fatalf("two calls at once got %+v and %+v, want two ids at epoch 0", a, b)
	}
	ws.give(a)
	if c := ws.take(); c.id != a.id || c.epoch != 1 {
		t.Fatalf("after %+v was given back, took %+v, want its id at epoch 1", a, c)
	}
	ws.give(kvWriter{id: 9, epoch: math.MaxInt16})
	if c := ws.take(); c.id == 9 || c.epoch != 0 {
		t.Fatalf("past the largest epoch took %+v, want a new id at epoch 0", c)
	}
}
