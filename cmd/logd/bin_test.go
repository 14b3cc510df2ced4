package main

// Helpers for tests of the real binary: built once per test process by
// internal/logdbin, run as a child process with its own environment, its
// exit code and its standard error checked the way a user or a script sees
// them.

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logd/logd/internal/logdbin"
)

func TestMain(m *testing.M) { os.Exit(logdbin.Main(m)) }

// binResult is what one run of the binary printed, and its exit code.
type binResult struct {
	stdout, stderr string
	code           int
}

// runBin runs `logd args...` with stdin and env (KEY=VALUE, on top of an
// environment without LOGD_* variables) and waits up to a minute.
func runBin(t *testing.T, env []string, stdin string, args ...string) binResult {
	t.Helper()
	cmd := exec.Command(logdbin.Binary(t), args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("logd %s did not finish in a minute:\n%s", strings.Join(args, " "), errb.String())
	}
	r := binResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// okBin runs the binary and fails the test unless it exits 0.
func okBin(t *testing.T, env []string, stdin string, args ...string) string {
	t.Helper()
	r := runBin(t, env, stdin, args...)
	if r.code != 0 {
		t.Fatalf("logd %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// failBin runs the binary, expects a non-zero exit with one line on stderr
// containing want, and returns that line.
func failBin(t *testing.T, env []string, stdin, want string, args ...string) string {
	t.Helper()
	r := runBin(t, env, stdin, args...)
	line := strings.TrimSuffix(r.stderr, "\n")
	if r.code == 0 || strings.Contains(line, "\n") || !strings.Contains(line, want) {
		t.Fatalf("logd %s: exit %d, stderr %q: want a non-zero exit and one line with %q", strings.Join(args, " "), r.code, r.stderr, want)
	}
	return line
}

// cleanEnv is the test's environment without LOGD_* variables, so a
// developer's LOGD_SERVER does not leak into the tests.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOGD_") {
			env = append(env, kv)
		}
	}
	return env
}

// binNode is a `logd serve` process.
type binNode struct {
	addr, http string
	cmd        *exec.Cmd
	exited     chan struct{}
	mu         sync.Mutex
	log        strings.Builder
}

// servingLine finds the node's addresses in its "logd serving" line, in
// the text or the JSON log format.
var servingLine = regexp.MustCompile(`logd serving"? addr=(\S+) http="?([^" ]*)|"msg":"logd serving","addr":"([^"]+)","http":"([^"]*)"`)

// startBin starts `logd serve args...` with env and waits until it serves.
// It is killed when the test ends.
func startBin(t *testing.T, env []string, args ...string) *binNode {
	t.Helper()
	cmd := exec.Command(logdbin.Binary(t), append([]string{"serve"}, args...)...)
	cmd.Env = append(cleanEnv(), env...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &binNode{cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); pw.Close(); close(n.exited) }()
	t.Cleanup(func() { n.signal(syscall.SIGKILL) })
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			n.mu.Lock()
			n.log.WriteString(sc.Text() + "\n")
			n.mu.Unlock()
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m:
				default:
				}
			}
		}
	}()
	select {
	case m := <-found:
		n.addr, n.http = m[1]+m[3], m[2]+m[4]
	case <-n.exited:
		t.Fatalf("logd serve exited before serving:\n%s", n.stderr())
	case <-time.After(30 * time.Second):
		t.Fatalf("logd serve did not start in 30s:\n%s", n.stderr())
	}
	return n
}

func (n *binNode) stderr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log.String()
}

// signal sends sig and waits for the process to exit.
func (n *binNode) signal(sig syscall.Signal) {
	select {
	case <-n.exited:
		return
	default:
	}
	n.cmd.Process.Signal(sig)
	select {
	case <-n.exited:
	case <-time.After(20 * time.Second):
		n.cmd.Process.Kill()
		<-n.exited
	}
}

// get fetches path from the node's HTTP address.
func (n *binNode) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + n.http + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
