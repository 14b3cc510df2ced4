package txn

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Each end decision is logged at debug level with the transactional id,
// the producer id and epoch, the transaction's number, the state before
// and after, and the answer; a logger above debug gets none.
func TestEndDecisionsAreLoggedAtDebug(t *testing.T) {
	var buf bytes.Buffer
	f := newFixture()
	f.c.cfg.Log = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pid, epoch, err := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{{"a", 0}}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.End(ctx, "t", pid, epoch, false); err != nil {
		t.Fatal(err)
	}
	if err := f.c.End(ctx, "t", pid, epoch, true); code(err) != CodeInvalidState {
		t.Fatalf("commit of an aborted transaction: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("logged %q, want two end decisions", lines)
	}
	for i, want := range [][]string{
		{`msg="transactions: end"`, "transactional_id=t", "commit=false", "txn=1", "state_before=Ongoing", "state_after=CompleteAbort", "answer=ok", "epoch=0"},
		{"commit=true", "state_before=CompleteAbort", "state_after=CompleteAbort", `answer="transactional id \"t\": cannot commit`},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}

	buf.Reset()
	f.c.cfg.Log = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f.now = f.now.Add(time.Hour)
	if err := f.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{{"a", 0}}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.End(ctx, "t", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("logged at info level: %q", buf.String())
	}
}
