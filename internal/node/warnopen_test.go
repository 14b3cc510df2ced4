package node

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/logd/logd/auth"
)

// --auth none on an address other machines reach warns loudly, naming the
// addresses; on loopback, or with authentication, it says nothing.
func TestWarnOpen(t *testing.T) {
	for _, c := range []struct {
		addr, http, kafka string
		mode              auth.AuthMode
		want              string
	}{
		{"0.0.0.0:7070", "127.0.0.1:7071", "", auth.AuthNone, "0.0.0.0:7070"},
		{"127.0.0.1:7070", "", "logd.example:9092", auth.AuthNone, "logd.example:9092"},
		{"127.0.0.1:7070", "localhost:7071", "[::1]:9092", auth.AuthNone, ""},
		{"0.0.0.0:7070", "", "", auth.AuthRequired, ""},
	} {
		var buf bytes.Buffer
		s := &Node{cfg: Config{Addr: c.addr, HTTPAddr: c.http}, logger: slog.New(slog.NewTextHandler(&buf, nil))}
		s.cfg.Auth.Mode = c.mode
		s.warnOpen(c.kafka)
		got := buf.String()
		if c.want == "" {
			if got != "" {
				t.Errorf("%+v: warned %q", c, got)
			}
			continue
		}
		if !strings.Contains(got, "AUTHENTICATION IS OFF") || !strings.Contains(got, c.want) {
			t.Errorf("%+v: logged %q, want a loud warning naming %s", c, got, c.want)
		}
	}
}
