// Package edge tests logd at its API edge with bad and hostile input, against
// the real binary run as a process: malformed and random protobuf bytes,
// random field values, oversized messages, floods of connections and streams
// (and HTTP/2 rapid reset), a descriptor limit, a full disk, subscribers that
// never read, topics deleted and re-created under load, and kill -9 around
// metadata operations. In every case the server must stay up, answer with a
// clear status, keep serving other clients, keep its memory bounded (read
// from /proc/PID/status) and keep its data consistent.
package edge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/logd/logd/internal/logdbin"
	pb "github.com/logd/logd/proto/logd/v1"
)

// logdBinary is the logd binary built once for the package's tests.
func logdBinary(t *testing.T) string { return logdbin.Binary(t) }

func TestMain(m *testing.M) { os.Exit(logdbin.Main(m)) }

// server is a running `logd serve`.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	http   string // the HTTP address, when started with --http-addr
	exited chan struct{}
	stderr *tail
}

// tail keeps the last lines a process wrote.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (l *tail) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	if len(l.lines) > 200 {
		l.lines = l.lines[len(l.lines)-200:]
	}
}

func (l *tail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

var addrLine = regexp.MustCompile(`logd serving"? addr=(\S+) http=(\S+)`)

// startServer starts logd on a free port. With nofile > 0 the process runs
// under that descriptor limit (soft and hard: Go raises the soft limit to
// the hard one). It is killed when the test ends.
func startServer(t *testing.T, nofile int) *server {
	t.Helper()
	return startServerWith(t, t.TempDir(), nofile)
}

// startServerIn starts logd on dataDir.
func startServerIn(t *testing.T, dataDir string) *server {
	t.Helper()
	return startServerWith(t, dataDir, 0)
}

// startServerWith starts logd on dataDir under a descriptor limit (see
// startServer), with extra flags.
func startServerWith(t *testing.T, dataDir string, nofile int, extra ...string) *server {
	t.Helper()
	args := append([]string{"serve", "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--http-addr", ""}, extra...)
	cmd := exec.Command(logdBinary(t), args...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if nofile > 0 {
		// The limit applies from here on: long before the test's flood,
		// while the server is still opening its data directory.
		lim := syscall.Rlimit{Cur: uint64(nofile), Max: uint64(nofile)}
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(cmd.Process.Pid), syscall.RLIMIT_NOFILE,
			uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
			cmd.Process.Kill()
			t.Fatalf("limit the server's descriptors to %d: %v", nofile, errno)
		}
	}
	s := &server{t: t, cmd: cmd, exited: make(chan struct{}), stderr: &tail{}}
	go func() { cmd.Wait(); pw.Close(); close(s.exited) }()
	t.Cleanup(s.kill)
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.stderr.add(sc.Text())
			if m := addrLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1:]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case m := <-found:
		s.addr, s.http = m[0], strings.Trim(m[1], `"`)
	case <-s.exited:
		t.Fatalf("logd exited before serving:\n%s", s.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("logd did not serve within 30s:\n%s", s.stderr)
	}
	return s
}

// kill kills the process (SIGKILL: no shutdown, as in a crash) unless it
// has exited, and waits for it to exit.
func (s *server) kill() {
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
}

// alive fails the test when the process has exited.
func (s *server) alive() {
	s.t.Helper()
	select {
	case <-s.exited:
		s.t.Fatalf("logd exited (%v); its last lines:\n%s", s.cmd.ProcessState, s.stderr)
	default:
	}
}

// rss is the process's resident set in bytes (VmRSS of /proc/PID/status).
func (s *server) rss() int64 {
	s.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		s.alive()
		s.t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	s.t.Fatal("no VmRSS in /proc status")
	return 0
}

// cpu is the CPU time (user and system) the process has used.
func (s *server) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which ends with ')'): utime and
	// stime are the 12th and 13th, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// fds is the number of descriptors the process holds.
func (s *server) fds() int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	return len(es)
}

// dial opens a new connection to the server.
func (s *server) dial(opts ...grpc.DialOption) *grpc.ClientConn {
	s.t.Helper()
	cc, err := grpc.NewClient(s.addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { cc.Close() })
	return cc
}

// probe is a well-behaved client on its own connection: it produces one
// record to topic and reads it back, and fails the test if the server does
// not serve it within 10s.
type probe struct {
	s     *server
	topic string
	log   pb.LogClient
	n     int
}

func newProbe(t *testing.T, s *server, topic string) *probe {
	cc := s.dial()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := pb.NewAdminClient(cc).CreateTopic(ctx, &pb.CreateTopicRequest{Name: topic, Partitions: 1}); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	return &probe{s: s, topic: topic, log: pb.NewLogClient(cc)}
}

// check produces a record and fetches it at the offset it was given.
func (p *probe) check(what string) {
	t := p.s.t
	t.Helper()
	p.s.alive()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.n++
	val := fmt.Sprintf("probe-%d", p.n)
	resp, err := p.log.Produce(ctx, &pb.ProduceRequest{Topic: p.topic, Records: []*pb.Record{{Value: []byte(val)}}})
	if err != nil {
		t.Fatalf("%s: a well-behaved producer is not served: %v", what, err)
	}
	off := resp.Appends[0].BaseOffset
	f, err := p.log.Fetch(ctx, &pb.FetchRequest{Topic: p.topic, Offset: off, Decode: true})
	if err != nil {
		t.Fatalf("%s: a well-behaved reader is not served: %v", what, err)
	}
	if len(f.Records) == 0 || string(f.Records[0].Value) != val || f.Records[0].Offset != off {
		t.Fatalf("%s: read back %v at %d, want %q", what, f.Records, off, val)
	}
}

// checkRSS fails when the server's resident memory grew more than limit
// over base.
func (s *server) checkRSS(what string, base, limit int64) {
	s.t.Helper()
	now := s.rss()
	s.t.Logf("%s: RSS %d MiB (was %d MiB)", what, now>>20, base>>20)
	if now-base > limit {
		s.t.Errorf("%s: server RSS grew by %d MiB, over the %d MiB bound", what, (now-base)>>20, limit>>20)
	}
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
