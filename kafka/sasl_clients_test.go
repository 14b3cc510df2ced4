package kafka

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/auth"
)

// kcat (librdkafka) logs in with SCRAM over TLS (security.protocol
// SASL_SSL), produces and consumes; a wrong password is an authentication
// error.
func TestKcatSASLSSL(t *testing.T) {
	needCommand(t, "kcat", "kcat")
	ss := startSecure(t, secureOpts{mode: auth.AuthRequired, tls: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := ss.core.CreateTopic(ctx, "", topicConfig("sec", 1)); err != nil {
		t.Fatal(err)
	}
	addr := ss.s.Addr().String()
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"} {
		sasl := func(pass string) []string {
			return []string{"-b", addr, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + mech,
				"-X", "sasl.username=alice", "-X", "sasl.password=" + pass, "-X", "ssl.ca.location=" + ss.ca.File}
		}
		run(t, ctx, "k:"+mech+"\n", "kcat", append(sasl("s3cret"), "-P", "-t", "sec", "-K:")...)
		out := run(t, ctx, "", "kcat", append(sasl("s3cret"), "-C", "-t", "sec", "-o", "beginning", "-e", "-f", "%k=%s\n")...)
		if !strings.Contains(out, "k="+mech+"\n") {
			t.Fatalf("%s: kcat consumed %q, want the record it produced", mech, out)
		}
		cmd := exec.CommandContext(ctx, "kcat", append(sasl("wrong"), "-L", "-m", "5")...)
		b, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(b), "SASL authentication error") || !strings.Contains(string(b), "wrong user name or password") {
			t.Fatalf("%s with a wrong password: %v\n%s\nwant an authentication failure", mech, err, b)
		}
	}
}
