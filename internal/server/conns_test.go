package server

import (
	"io"
	"log/slog"
	"testing"
)

// TestCapsWithin: connection caps leave a quarter of the descriptors (at
// least 64) to files, and the HTTP port's cap shrinks first.
func TestCapsWithin(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		nofile, api, http int
		wantAPI, wantHTTP int
	}{
		{1 << 20, 4096, 128, 4096, 128},
		{512, 4096, 128, 360, 24},
		{256, 4096, 128, 180, 12},
		{100, 4096, 128, 32, 4},
		{512, 100, 10, 100, 10},
	} {
		a, h := capsWithin(c.nofile, c.api, c.http, quiet)
		if a != c.wantAPI || h != c.wantHTTP {
			t.Errorf("capsWithin(%d, %d, %d) = %d, %d, want %d, %d", c.nofile, c.api, c.http, a, h, c.wantAPI, c.wantHTTP)
		}
		if reserve := c.nofile - a - h; c.api+c.http > c.nofile && reserve < max(64, c.nofile/4) {
			t.Errorf("nofile %d: only %d descriptors left for files", c.nofile, reserve)
		}
	}
}
