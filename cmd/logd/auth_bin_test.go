package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/testcerts"
)

// The binary end to end: a node with TLS, --auth required, --authz on and
// a bootstrap administrator; the CLI creates a user and an ACL and uses
// them; a refused request is one line on stderr and a non-zero exit.
func TestBinUsersAndACLs(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	cert, key := ca.Pair(t, t.TempDir(), "node")
	n := startBin(t, []string{"LOGD_TLS_CERT=" + cert, "LOGD_TLS_KEY=" + key, "LOGD_BOOTSTRAP_USER=admin:admin-pw"},
		"--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "", "--kafka-addr", "",
		"--auth", "required", "--authz", "on", "--super-users", "User:admin")
	tlsEnv := []string{"LOGD_SERVER=" + n.addr, "LOGD_TLS_CA=" + ca.File}
	admin := append([]string{"LOGD_USER=admin", "LOGD_PASSWORD=admin-pw"}, tlsEnv...)
	// The bootstrap user is created as the node starts.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r := runBin(t, admin, "alice-pw\n", "user", "create", "alice")
		if r.code == 0 {
			if r.stdout != "user alice created\n" {
				t.Fatalf("user create printed %q", r.stdout)
			}
			break
		}
		if !strings.Contains(r.stderr, "wrong user name or password") || time.Now().After(deadline) {
			t.Fatalf("user create: exit %d: %s", r.code, r.stderr)
		}
	}
	if out := okBin(t, admin, "", "user", "list"); out != "admin\nalice\n" {
		t.Fatalf("user list: %q", out)
	}
	failBin(t, admin, "again\n", "exists", "user", "create", "alice")
	okBin(t, admin, "", "topic", "create", "orders", "--partitions", "1")
	okBin(t, admin, "", "acl", "add", "--principal", "User:alice", "--operation", "write,describe", "--topic", "orders")
	okBin(t, admin, "", "acl", "add", "--principal", "User:alice", "--operation", "read", "--topic", "ord", "--pattern", "prefix", "--permission", "deny")
	if out := okBin(t, admin, "", "acl", "list", "--principal", "User:alice"); strings.Count(out, "User:alice") != 3 ||
		!strings.Contains(out, "deny") || !strings.Contains(out, "prefixed") {
		t.Fatalf("acl list:\n%s", out)
	}
	// --json, as the README promises for every listing.
	if out := okBin(t, admin, "", "user", "list", "--json"); out != "{\"user\":\"admin\"}\n{\"user\":\"alice\"}\n" {
		t.Fatalf("user list --json: %q", out)
	}
	out := okBin(t, admin, "", "acl", "list", "--principal", "User:alice", "--json")
	var acl aclJSON
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || json.Unmarshal([]byte(lines[0]), &acl) != nil || acl.Principal != "User:alice" {
		t.Fatalf("acl list --json:\n%s", out)
	}
	// alice: her password on stdin's first line, records after it.
	okBin(t, tlsEnv, "alice-pw\nr1\nr2\n", "produce", "orders", "--user", "alice", "--password-stdin")
	alice := append([]string{"LOGD_USER=alice", "LOGD_PASSWORD=alice-pw"}, tlsEnv...)
	line := failBin(t, alice, "", "User:alice", "consume", "orders", "--count", "2")
	if !strings.Contains(line, "read") || !strings.Contains(line, "orders") {
		t.Fatalf("refused consume: %q does not name the operation and topic", line)
	}
	failBin(t, alice, "", "User:alice", "user", "list")
	if out := okBin(t, admin, "", "consume", "orders", "--count", "2"); out != "r1\nr2\n" {
		t.Fatalf("admin consumes %q", out)
	}
	// Wrong password, none, and a password without TLS.
	failBin(t, append([]string{"LOGD_USER=alice", "LOGD_PASSWORD=nope"}, tlsEnv...), "", "wrong user name or password", "topic", "list")
	failBin(t, tlsEnv, "", "requires authentication", "topic", "list")
	failBin(t, []string{"LOGD_SERVER=" + n.addr, "LOGD_USER=alice", "LOGD_PASSWORD=alice-pw"}, "", "over TLS only", "topic", "list")
	failBin(t, append([]string{"LOGD_USER=alice"}, tlsEnv...), "", "LOGD_PASSWORD", "topic", "list")
	// Removing the deny lets her read.
	okBin(t, admin, "", "acl", "remove", "--principal", "User:alice", "--permission", "deny")
	okBin(t, admin, "", "acl", "add", "--principal", "User:alice", "--operation", "read", "--topic", "orders")
	if out := okBin(t, alice, "", "consume", "orders", "--count", "2"); out != "r1\nr2\n" {
		t.Fatalf("alice consumes %q", out)
	}
	failBin(t, admin, "", "refusing to remove every ACL", "acl", "remove")
	okBin(t, admin, "", "user", "delete", "alice")
	failBin(t, alice, "", "wrong user name or password", "topic", "list")
}

// --auth, --authz and --super-users from a config file, and bad values.
func TestServeAuthFlags(t *testing.T) {
	file := writeFile(t, "logd.toml", "auth = \"optional\"\nauthz = \"on\"\nsuper-users = \"User:admin, User:node\"\npprof = true\n")
	var fl serveFlags
	cmd := &cobra.Command{}
	fl.register(cmd.Flags())
	if _, err := applyConfig(cmd.Flags(), file, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatal(err)
	}
	cfg, err := fl.nodeConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth.Mode != auth.AuthOptional || cfg.Auth.Authz != auth.AuthzOn || len(cfg.Auth.SuperUsers) != 2 || !cfg.PProf {
		t.Fatalf("config file: %+v pprof %v", cfg.Auth, cfg.PProf)
	}
	for _, c := range []struct{ args []string }{
		{[]string{"--auth", "maybe"}}, {[]string{"--authz", "yes"}}, {[]string{"--super-users", "User:*"}},
		{[]string{"--authz", "on", "--super-users", "User:admin"}}, // --auth none: no one can be admin
	} {
		fl := serveFlags{}
		cmd := &cobra.Command{}
		fl.register(cmd.Flags())
		if err := cmd.Flags().Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if _, err := fl.nodeConfig(); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(c.args[len(c.args)-2], "")) {
			t.Fatalf("%v: %v, want an error naming the flag", c.args, err)
		}
	}
	t.Setenv("LOGD_BOOTSTRAP_USER", "nocolon")
	if _, err := (&serveFlags{auth: struct{ mode, authz, superUsers string }{"none", "off", ""}}).authConfig(); err == nil {
		t.Fatal("LOGD_BOOTSTRAP_USER without a password was accepted")
	}
}
