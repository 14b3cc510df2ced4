package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// errorLines keeps what is logged at Error, with its "err".
type errorLines struct {
	mu    sync.Mutex
	lines []string
}

func (h *errorLines) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *errorLines) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			line += ": " + a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, line)
	h.mu.Unlock()
	return nil
}
func (h *errorLines) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *errorLines) WithGroup(string) slog.Handler      { return h }

// A core error the API does not map is answered 500 and logged once at
// Error (the node's log is slog's default); a mapped one is not logged.
func TestUnexpectedErrorLogged(t *testing.T) {
	h := &errorLines{}
	old := slog.Default()
	slog.SetDefault(slog.New(h))
	t.Cleanup(func() { slog.SetDefault(old) })

	unmapped := errors.New("the disk controller caught fire")
	w := httptest.NewRecorder()
	writeCoreError(w, unmapped)
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("answered %d, want 500", w.Code)
	}
	writeCoreError(httptest.NewRecorder(), context.DeadlineExceeded)
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.lines {
		if strings.Contains(l, unmapped.Error()) {
			n++
		}
		if strings.Contains(l, context.DeadlineExceeded.Error()) {
			t.Errorf("a mapped error was logged: %q", l)
		}
	}
	if n != 1 {
		t.Fatalf("logged %q, want the unmapped error once", h.lines)
	}
}
