package edge

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestServeRejectsInvalidAddresses: `logd serve` with an address that is
// not HOST:PORT, or a port out of range, says which flag is wrong and why,
// instead of blaming "another logd running?" (issue 17 item 7); only an
// address that is in use says so.
func TestServeRejectsInvalidAddresses(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		args []string
		want []string // all in stderr
	}{
		{[]string{"--addr", "127.0.0.1:99999"}, []string{"--addr 127.0.0.1:99999", "port", "0 to 65535"}},
		{[]string{"--addr", "127.0.0.1"}, []string{"--addr 127.0.0.1", "HOST:PORT"}},
		{[]string{"--addr", "127.0.0.1:-1"}, []string{"--addr 127.0.0.1:-1", "port"}},
		{[]string{"--http-addr", "127.0.0.1:70000"}, []string{"--http-addr 127.0.0.1:70000", "port"}},
		{[]string{"--addr", busy.Addr().String()}, []string{"--addr " + busy.Addr().String(), "in use"}},
	} {
		args := append([]string{"serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", ""}, c.args...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, logdBinary(t), args...).CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		msg := string(out)
		if err == nil || timedOut {
			t.Errorf("serve %v: %v, want a failed start\n%s", c.args, err, msg)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("serve %v: %q does not say %q", c.args, msg, w)
			}
		}
		if c.want[len(c.want)-1] != "in use" && strings.Contains(msg, "another logd") {
			t.Errorf("serve %v blames another logd: %q", c.args, msg)
		}
	}
}
