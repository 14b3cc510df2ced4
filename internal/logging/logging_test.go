package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Lines Raft and the transport wrote at WARN or ERROR in a 3-node cluster
// during a join, a clean SIGTERM and a restart of one node: routine, so at
// INFO or DEBUG; real trouble keeps its level.
func TestHCLogLevels(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:36701: connect: connection refused")
	closed := errors.New("read tcp 127.0.0.1:36701->127.0.0.1:32906: use of closed network connection")
	for _, tc := range []struct {
		level hclog.Level
		msg   string
		args  []any
		since time.Duration // since the node started
		want  slog.Level
	}{
		{hclog.Info, "entering follower state", nil, 0, slog.LevelDebug},
		{hclog.Trace, "sending heartbeat", nil, 0, slog.LevelDebug - 4},
		{hclog.Warn, "rejected connection for unknown group", []any{"group", "p/t/0"}, time.Second, slog.LevelDebug},
		{hclog.Warn, "rejected connection for unknown group", []any{"group", "p/t/0"}, time.Hour, slog.LevelWarn},
		{hclog.Error, "failed to heartbeat to", []any{"peer", "x", "error", refused}, time.Hour, slog.LevelDebug},
		{hclog.Error, "failed to appendEntries to", []any{"peer", "x", "error", refused}, time.Hour, slog.LevelDebug},
		{hclog.Error, "failed to make requestVote RPC", []any{"target", "x", "error", refused}, time.Hour, slog.LevelDebug},
		{hclog.Error, "failed to pipeline appendEntries", []any{"peer", "x", "error", closed}, time.Hour, slog.LevelDebug},
		{hclog.Error, "failed to decode incoming command", []any{"error", closed}, time.Hour, slog.LevelDebug},
		{hclog.Error, "failed to accept connection", []any{"error", `transport: closed: group "meta"`}, time.Hour, slog.LevelDebug},
		{hclog.Error, "failed to flush response", []any{"error", "write tcp 127.0.0.1:7092->127.0.0.1:48728: use of closed network connection"}, time.Hour, slog.LevelDebug},
		{hclog.Error, "failed to flush response", []any{"error", "write: no space left on device"}, time.Hour, slog.LevelError},
		{hclog.Warn, "failed to get previous log", []any{"error", "log not found"}, 0, slog.LevelDebug},
		{hclog.Warn, "appendEntries rejected, sending older logs", nil, 0, slog.LevelDebug},
		{hclog.Warn, "no known peers, aborting election", nil, 0, slog.LevelDebug},
		{hclog.Warn, "rejecting pre-vote request since we have a leader", nil, 0, slog.LevelDebug},
		{hclog.Warn, "failed to contact", []any{"server-id", "n3"}, time.Hour, slog.LevelDebug},
		{hclog.Warn, "heartbeat timeout reached, starting election", nil, time.Hour, slog.LevelInfo},
		// Not routine: these keep their level.
		{hclog.Warn, "failed to contact quorum of nodes, stepping down", nil, time.Hour, slog.LevelWarn},
		{hclog.Error, "failed to appendEntries to", []any{"error", "disk full"}, time.Hour, slog.LevelError},
		{hclog.Error, "failed to take snapshot", []any{"error", "no space left on device"}, 0, slog.LevelError},
	} {
		var buf bytes.Buffer
		l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug - 4}))
		h := &hcAdapter{l: l, name: "raft", started: time.Now().Add(-tc.since)}
		h.Log(tc.level, tc.msg, tc.args...)
		var rec struct {
			Level, Msg, Component string
		}
		if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %q: %v", tc.msg, buf.String(), err)
		}
		if want := tc.want.String(); rec.Level != want || rec.Msg != tc.msg || rec.Component != "raft" {
			t.Errorf("%s %q (%v after start): logged %+v, want level %s", tc.level, tc.msg, tc.since, rec, want)
		}
	}
}

// Named, With and the standard-logger bridge keep the component and
// attributes; the level is slog's.
func TestHCLogAttributes(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := HCLog(l, "raft").Named("meta").With("group", "meta")
	if h.IsDebug() || !h.IsWarn() || h.GetLevel() != hclog.Warn || h.Name() != "raft.meta" {
		t.Fatalf("IsDebug %v IsWarn %v GetLevel %v Name %q", h.IsDebug(), h.IsWarn(), h.GetLevel(), h.Name())
	}
	h.Info("entering leader state")                     // DEBUG: not printed
	h.Warn("failed to contact quorum of nodes", "n", 2) // printed
	h.StandardLogger(nil).Print("[ERR] raft: something broke")
	out := buf.String()
	for _, want := range []string{`level=WARN msg="failed to contact quorum of nodes" component=raft.meta group=meta n=2`,
		`level=ERROR msg="raft: something broke" component=raft.meta group=meta`} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "entering leader state") {
		t.Errorf("Raft's INFO printed at --log-level info:\n%s", out)
	}
}

func TestNew(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, "warn", "json")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown", "k", 1)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || rec["msg"] != "shown" {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	if _, err := New(&buf, "loud", "text"); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Fatalf("bad level: %v", err)
	}
	if _, err := New(&buf, "info", "xml"); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Fatalf("bad format: %v", err)
	}
}
