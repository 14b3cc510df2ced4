package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/broker"
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

// A handler's error becomes its status in the interceptor; a call that
// fails with an error toStatus does not map (Internal) is logged once at
// Error, a call failing with a mapped error is not.
func TestUnexpectedErrorLogged(t *testing.T) {
	h := &errorLines{}
	s := &Server{logger: slog.New(h)}
	unmapped := errors.New("the disk controller caught fire")
	info := &grpc.UnaryServerInfo{FullMethod: "/logd.v1.Log/Produce"}
	for _, c := range []struct {
		err  error
		code codes.Code
	}{{unmapped, codes.Internal}, {broker.ErrUnknownTopic, codes.NotFound}} {
		_, got := s.statusUnary(context.Background(), nil, info, func(context.Context, any) (any, error) {
			return nil, c.err
		})
		if status.Code(got) != c.code {
			t.Fatalf("the interceptor answered %v for %v, want code %v", got, c.err, c.code)
		}
	}
	err := s.statusStream(nil, nil, &grpc.StreamServerInfo{FullMethod: "/logd.v1.Log/Subscribe"},
		func(any, grpc.ServerStream) error { return unmapped })
	if status.Code(err) != codes.Internal {
		t.Fatalf("the interceptor answered %v for the stream, want code Internal", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.lines) != 2 {
		t.Fatalf("logged %q, want the unmapped error once per call (2)", h.lines)
	}
	for _, l := range h.lines {
		if !strings.Contains(l, unmapped.Error()) {
			t.Errorf("logged %q, which does not name the unmapped error", l)
		}
	}
}
