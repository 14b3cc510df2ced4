package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/client"
)

// An admin command right after a cluster node starts rides out its first
// election instead of failing with "no leader".
func TestBinAdminRidesOutAnElection(t *testing.T) {
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "",
		"--node-id", "n1", "--raft-addr", "127.0.0.1:0", "--bootstrap")
	if out := okBin(t, nil, "", "topic", "create", "t", "--server", n.addr); !strings.Contains(out, "created topic t") {
		t.Fatalf("topic create: %q", out)
	}
}

// Past --timeout the command fails with one line: what failed, that it
// retried, and the hint once; "is logd serve running?" only when nothing
// answers at all.
func TestBinAdminTimeoutIsOneClearLine(t *testing.T) {
	// A node that joins a cluster nobody runs never has a metadata leader.
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "",
		"--node-id", "n2", "--raft-addr", "127.0.0.1:0", "--join", "127.0.0.1:1")
	start := time.Now()
	line := failBin(t, nil, "", "still failing after retrying", "topic", "create", "t", "--server", n.addr, "--timeout", "2s")
	if d := time.Since(start); d < time.Second || d > 20*time.Second {
		t.Errorf("gave up after %v with --timeout 2s", d)
	}
	if strings.Count(line, "retry") > 2 || strings.Contains(line, "retry in a moment") || strings.Contains(line, "logd serve") || strings.Contains(line, "rpc error") {
		t.Errorf("not one clear line: %s", line)
	}
	t.Log(line)
	start = time.Now()
	failBin(t, nil, "", "cannot reach logd at 127.0.0.1:1: is `logd serve` running?", "topic", "list", "--server", "127.0.0.1:1")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("an address where nothing listens took %v to fail: nothing to wait for", d)
	}
}

// A consumer that was reading and loses its node says so; it does not ask
// whether logd runs (that is for a command nothing ever answered).
func TestRetryNoteOfAReadingConsumer(t *testing.T) {
	c, err := client.Dial("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Admin().ListTopics(context.Background())
	if note := retryNote(err, "127.0.0.1:1"); !strings.Contains(note, "lost the connection") || strings.Contains(note, "logd serve") {
		t.Errorf("retry note: %s", note)
	}
	if msg := explain(err, "127.0.0.1:1").Error(); !strings.Contains(msg, "is `logd serve` running?") {
		t.Errorf("explain: %s", msg)
	}
}

// unreachableErr is what the client returns when the one node an attempt
// went to refused the connection: an UNAVAILABLE status that matches
// client.ErrUnreachable.
type unreachableErr struct{ st *status.Status }

func (e unreachableErr) Error() string              { return e.st.Err().Error() }
func (e unreachableErr) GRPCStatus() *status.Status { return e.st }
func (e unreachableErr) Is(target error) bool {
	return target == client.ErrUnreachable || target == client.ErrUnavailable
}

// A record not acknowledged within --timeout says so, whatever its last
// attempt met: a partition whose leader's node is down ends on a refused
// connection to that node while the others answer, and "cannot reach
// logd at <the nodes that answered>: is logd serve running?" was wrong
// (CI, session 22: TestBinTopicCreateWaitsForItsTimeout).
func TestExplainDeliveryTimeoutIsNotUnreachable(t *testing.T) {
	last := unreachableErr{status.New(codes.Unavailable, "connection error: dial tcp 127.0.0.1:9: connect: connection refused")}
	err := fmt.Errorf("produce to stranded/2: %w (3s): %w", client.ErrDeliveryTimeout, last)
	msg := explain(err, "127.0.0.1:1,127.0.0.1:2").Error()
	if strings.Contains(msg, "logd serve") || !strings.Contains(msg, "not acknowledged within the delivery timeout (3s)") ||
		!strings.Contains(msg, "connection refused") || !strings.Contains(msg, "raise --timeout") {
		t.Errorf("explain: %s", msg)
	}
	// Without the delivery timeout, an unreachable node is still that.
	if msg := explain(last, "127.0.0.1:9").Error(); !strings.Contains(msg, "is `logd serve` running?") {
		t.Errorf("explain of an unreachable node: %s", msg)
	}
}
