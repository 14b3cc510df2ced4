package logging

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// startupGrace is how long after a node starts "rejected connection for
// unknown group" is routine: peers dial the groups of a restarted node
// before it has opened them again, and retry until it has.
const startupGrace = 30 * time.Second

// HCLog returns an hclog.Logger that writes to l: what hashicorp/raft and
// the replication transport take. name becomes the "component" attribute.
func HCLog(l *slog.Logger, name string) hclog.Logger {
	return &hcAdapter{l: l, name: name, started: time.Now()}
}

// hcAdapter implements hclog.Logger over slog. Its level is slog's: SetLevel
// is a no-op (the level is --log-level, set once).
type hcAdapter struct {
	l       *slog.Logger
	name    string
	implied []any
	started time.Time
}

// level maps an hclog level to slog's, lowering Raft's per-group INFO
// chatter to DEBUG and routine messages as routine says.
func (h *hcAdapter) level(lv hclog.Level, msg string, args []any) slog.Level {
	var out slog.Level
	switch lv {
	case hclog.Trace:
		out = slog.LevelDebug - 4
	case hclog.Debug, hclog.Info, hclog.NoLevel, hclog.DefaultLevel:
		out = slog.LevelDebug
	case hclog.Warn:
		out = slog.LevelWarn
	default:
		out = slog.LevelError
	}
	if lower, ok := routine(msg, errorArg(args), time.Since(h.started)); ok && lower < out {
		out = lower
	}
	return out
}

// errorArg is the text of the "error" (or "err") attribute of hclog args.
func errorArg(args []any) string {
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "error" || k == "err" {
			return fmt.Sprint(args[i+1])
		}
	}
	return ""
}

// peerGone are the errors of a peer that is down, restarting or shutting
// its connections: each Raft group logs them for every retry while the
// peer is away, which "failed to contact" and cluster status already say.
var peerGone = []string{"connection refused", "EOF", "use of closed network connection", "unknown group",
	"transport: closed", "connection reset by peer", "broken pipe", "stream closed",
	// The leader's append pipeline to a peer that went away.
	"append pipeline closed",
	// A restarted peer has not opened the group yet (it opens its groups
	// one reconcile at a time after it rejoins).
	"no group"}

// routine returns the level of a WARN or ERROR line of Raft or the
// transport that is a normal part of a node's life (a join, a restart, a
// clean SIGTERM, an election), given the line's error and how long ago the
// node started. Each case was seen in a 3-node cluster's logs.
func routine(msg, errText string, sinceStart time.Duration) (slog.Level, bool) {
	gone := slices.ContainsFunc(peerGone, func(s string) bool { return strings.Contains(errText, s) })
	switch {
	case msg == "rejected connection for unknown group":
		// Peers dial the groups of a restarted node before it has opened them.
		if sinceStart < startupGrace {
			return slog.LevelDebug, true
		}
	case gone && (strings.HasPrefix(msg, "failed to heartbeat to") || strings.HasPrefix(msg, "failed to appendEntries to") ||
		strings.HasPrefix(msg, "failed to pipeline appendEntries") || strings.HasPrefix(msg, "failed to make requestVote RPC") ||
		strings.HasPrefix(msg, "failed to start pipeline replication to") ||
		msg == "failed to decode incoming command" || msg == "failed to accept connection" ||
		msg == "failed to flush response"): // a removed or stopping peer closed its end
		return slog.LevelDebug, true
	case msg == "failed to decode incoming command" && strings.Contains(errText, "i/o deadline reached"):
		// The metadata group's transport closing its streams as the node
		// stops.
		return slog.LevelDebug, true
	case msg == "failed to get previous log", msg == "appendEntries rejected, sending older logs",
		msg == "no known peers, aborting election", // a joining node, before the cluster added it
		strings.HasPrefix(msg, "rejecting pre-vote request since"), strings.HasPrefix(msg, "rejecting vote request since"):
		// A joining or restarted follower catching up; an election another
		// node started while this one still heard its leader.
		return slog.LevelDebug, true
	case msg == "failed to contact":
		// A follower went silent (a restart, a SIGTERM): each group says it
		// about twice a second until the follower is back.
		return slog.LevelDebug, true
	case msg == "heartbeat timeout reached, starting election", msg == "Election timeout reached, restarting election":
		// This node lost its leader: an election follows. Losing the
		// quorum stays a warning.
		return slog.LevelInfo, true
	}
	return 0, false
}

func (h *hcAdapter) Log(lv hclog.Level, msg string, args ...any) {
	level := h.level(lv, msg, args)
	ctx := context.Background()
	if !h.l.Enabled(ctx, level) {
		return
	}
	attrs := make([]any, 0, 2+len(h.implied)+len(args))
	attrs = append(attrs, "component", h.name)
	attrs = append(attrs, h.implied...)
	attrs = append(attrs, args...)
	h.l.Log(ctx, level, msg, attrs...)
}

func (h *hcAdapter) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hcAdapter) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hcAdapter) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hcAdapter) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hcAdapter) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hcAdapter) enabled(lv hclog.Level) bool {
	return h.l.Enabled(context.Background(), h.level(lv, "", nil))
}

func (h *hcAdapter) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hcAdapter) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hcAdapter) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hcAdapter) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hcAdapter) IsError() bool { return h.enabled(hclog.Error) }

func (h *hcAdapter) ImpliedArgs() []any { return h.implied }

func (h *hcAdapter) With(args ...any) hclog.Logger {
	c := *h
	c.implied = append(append([]any(nil), h.implied...), args...)
	return &c
}

func (h *hcAdapter) Name() string { return h.name }

func (h *hcAdapter) Named(name string) hclog.Logger {
	c := *h
	if c.name != "" {
		name = c.name + "." + name
	}
	c.name = name
	return &c
}

func (h *hcAdapter) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

func (h *hcAdapter) SetLevel(hclog.Level) {}

// GetLevel reports the most verbose hclog level slog would print.
func (h *hcAdapter) GetLevel() hclog.Level {
	for _, lv := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn} {
		if h.enabled(lv) {
			return lv
		}
	}
	return hclog.Error
}

func (h *hcAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

// StandardWriter logs each write as one message; "[WARN] " style prefixes
// (what hashicorp libraries write through a standard logger) set the level.
func (h *hcAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return stdWriter{h}
}

type stdWriter struct{ h *hcAdapter }

func (w stdWriter) Write(p []byte) (int, error) {
	msg := string(bytes.TrimRight(p, "\n"))
	lv := hclog.Info
	for prefix, l := range map[string]hclog.Level{"[TRACE]": hclog.Trace, "[DEBUG]": hclog.Debug, "[INFO]": hclog.Info,
		"[WARN]": hclog.Warn, "[ERR]": hclog.Error, "[ERROR]": hclog.Error} {
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			msg, lv = strings.TrimSpace(rest), l
			break
		}
	}
	w.h.Log(lv, msg)
	return len(p), nil
}
