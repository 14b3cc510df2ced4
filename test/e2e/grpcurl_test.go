package e2e

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// grpcurl finds the real grpcurl (`make tools` installs it into .tools).
func grpcurl(t *testing.T) string {
	t.Helper()
	if p, err := filepath.Abs("../../.tools/grpcurl"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("grpcurl")
	if err != nil {
		t.Fatal("grpcurl not found: run `make tools` (go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4)")
	}
	return p
}

func runGrpcurl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(grpcurl(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("grpcurl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestGrpcurlThroughReflection lists the services and produces and fetches
// a record with grpcurl, which knows logd's API only through reflection.
func TestGrpcurlThroughReflection(t *testing.T) {
	n := startNode(t, t.TempDir())
	list := runGrpcurl(t, "-plaintext", n.addr, "list")
	for _, svc := range []string{"logd.v1.Log", "logd.v1.Admin", "grpc.health.v1.Health"} {
		if !strings.Contains(list, svc) {
			t.Fatalf("grpcurl list lacks %s:\n%s", svc, list)
		}
	}
	runGrpcurl(t, "-plaintext", "-d", `{"name":"tour","partitions":1}`, n.addr, "logd.v1.Admin/CreateTopic")
	key := base64.StdEncoding.EncodeToString([]byte("alice"))
	val := base64.StdEncoding.EncodeToString([]byte("hello from grpcurl"))
	out := runGrpcurl(t, "-plaintext", "-d", `{"topic":"tour","records":[{"key":"`+key+`","value":"`+val+`"}]}`, n.addr, "logd.v1.Log/Produce")
	if !strings.Contains(out, `"appends"`) {
		t.Fatalf("produce answered:\n%s", out)
	}
	out = runGrpcurl(t, "-plaintext", "-d", `{"topic":"tour","partition":0,"offset":0,"decode":true}`, n.addr, "logd.v1.Log/Fetch")
	if !strings.Contains(out, val) || !strings.Contains(out, key) {
		t.Fatalf("fetch did not return the record:\n%s", out)
	}
	health := runGrpcurl(t, "-plaintext", n.addr, "grpc.health.v1.Health/Check")
	if !strings.Contains(health, "SERVING") {
		t.Fatalf("health: %s", health)
	}
	n.stop()
}
