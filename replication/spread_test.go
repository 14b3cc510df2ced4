package replication

import (
	"errors"
	"testing"
	"time"
)

// A group whose leadership transfer failed is not offered again at the
// next spreading round (Raft refuses writes while it transfers), and each
// failure in a row doubles the wait, up to maxMoveRetry; a success clears it.
func TestFailedLeadershipTransferBacksOff(t *testing.T) {
	n := &Node{}
	if !n.mayMove("g") {
		t.Fatal("a group never moved may not move")
	}
	fail := errors.New("leadership transfer timeout")
	n.moveDone("g", fail)
	if n.mayMove("g") {
		t.Fatal("a group whose transfer just failed may move again at once")
	}
	if !n.mayMove("other") {
		t.Fatal("another group's failure holds this one")
	}
	waits := []time.Duration{n.failedMoves["g"].wait}
	for range 8 {
		n.moveDone("g", fail)
		waits = append(waits, n.failedMoves["g"].wait)
	}
	if waits[0] != firstMoveRetry || waits[1] != 2*firstMoveRetry || waits[len(waits)-1] != maxMoveRetry {
		t.Fatalf("waits after failures in a row: %v, want %v doubling up to %v", waits, firstMoveRetry, maxMoveRetry)
	}
	n.moveDone("g", nil)
	if !n.mayMove("g") {
		t.Fatal("a group whose transfer succeeded may not move")
	}
}
