// Package e2e tests the real logd binary as a user runs it: built with `go
// build`, started as a process on 127.0.0.1, killed with SIGKILL, restarted.
package e2e

import (
	"bufio"
	"context"
	"github.com/logd/logd/internal/logdbin"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/logd/logd/proto/logd/v1"
)

// logdBinary is the logd binary built once for the package's tests.
func logdBinary(t *testing.T) string { return logdbin.Binary(t) }

func TestMain(m *testing.M) { os.Exit(logdbin.Main(m)) }

// node is a running `logd serve` process.
type node struct {
	t       *testing.T
	cmd     *exec.Cmd
	addr    string
	dataDir string
	exited  chan struct{}
	stderr  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var addrLine = regexp.MustCompile(`logd serving"? addr=(\S+)`)

// startNode starts logd on a free port and waits until it serves. The
// process is killed when the test ends if it is still running.
func startNode(t *testing.T, dataDir string, extra ...string) *node {
	t.Helper()
	args := append([]string{"serve", "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--http-addr", ""}, extra...)
	cmd := exec.Command(logdBinary(t), args...)
	pr, pw := io.Pipe()
	buf := &syncBuffer{}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, cmd: cmd, dataDir: dataDir, exited: make(chan struct{}), stderr: buf}
	go func() { cmd.Wait(); pw.Close(); close(n.exited) }()
	t.Cleanup(func() { n.kill() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			buf.Write(append(sc.Bytes(), '\n'))
			if m := addrLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case n.addr = <-found:
	case <-n.exited:
		t.Fatalf("logd exited before serving:\n%s", buf.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("logd did not start in 30s:\n%s", buf.String())
	}
	return n
}

func (n *node) kill() {
	select {
	case <-n.exited:
		return
	default:
	}
	n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.exited
}

func (n *node) stop() {
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(20 * time.Second):
		n.t.Errorf("logd did not stop on SIGTERM within 20s:\n%s", n.stderr.String())
		n.kill()
	}
}

func (n *node) dial(t *testing.T) (pb.LogClient, pb.AdminClient) {
	cc := n.conn(t)
	return pb.NewLogClient(cc), pb.NewAdminClient(cc)
}

func (n *node) conn(t *testing.T) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(n.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
