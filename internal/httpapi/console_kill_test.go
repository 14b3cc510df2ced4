package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logd/logd/internal/freeport"
	"github.com/logd/logd/internal/httpapi"
	"github.com/logd/logd/internal/logdbin"
)

func TestMain(m *testing.M) { os.Exit(logdbin.Main(m)) }

// logdProc is a `logd serve` process on 127.0.0.1, killed when the test
// ends.
type logdProc struct {
	id, addr, http string
	cmd            *exec.Cmd
	exited         chan struct{}
	mu             sync.Mutex
	log            strings.Builder
}

var servingLine = regexp.MustCompile(`logd serving"? addr=(\S+) http="?([^" ]*)`)

func startLogd(t *testing.T, id string, args ...string) *logdProc {
	t.Helper()
	raft, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	args = append([]string{"serve", "--node-id", id, "--data-dir", t.TempDir(), "--raft-addr", raft,
		"--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--kafka-addr", "", "--fsync", "never"}, args...)
	cmd := exec.Command(logdbin.Binary(t), args...)
	cmd.Env = envWithoutLogd()
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &logdProc{id: id, cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); pw.Close(); close(p.exited) }()
	t.Cleanup(p.kill)
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
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
		p.addr, p.http = m[1], m[2]
	case <-p.exited:
		t.Fatalf("logd serve %s exited before serving:\n%s", id, p.stderr())
	case <-time.After(30 * time.Second):
		t.Fatalf("logd serve %s did not start in 30s:\n%s", id, p.stderr())
	}
	return p
}

// envWithoutLogd is the test's environment without LOGD_* variables (a
// developer's LOGD_SERVER must not leak into the tests).
func envWithoutLogd() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOGD_") {
			env = append(env, kv)
		}
	}
	return env
}

func (p *logdProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// kill is kill -9, and waits for the process to exit.
func (p *logdProc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// logdCLI runs a client command of the binary and fails the test unless
// it exits 0.
func logdCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(logdbin.Binary(t), args...)
	cmd.Env = envWithoutLogd()
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("logd %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// procCluster is three `logd serve` processes with topic of 3 partitions,
// 3 replicas, once every partition has a leader every node knows; leaders
// names each partition's leader.
func procCluster(t *testing.T, topic string) (nodes []*logdProc, leaders []string) {
	t.Helper()
	n1 := startLogd(t, "n1", "--bootstrap")
	nodes = []*logdProc{n1, startLogd(t, "n2", "--join", n1.addr), startLogd(t, "n3", "--join", n1.addr)}
	all := []string{"--server", n1.addr + "," + nodes[1].addr + "," + nodes[2].addr, "--timeout", "60s"}
	logdCLI(t, append([]string{"cluster", "wait", "--nodes", "3"}, all...)...)
	logdCLI(t, append([]string{"topic", "create", topic, "--partitions", "3", "--replicas", "3"}, all...)...)
	waitFor(t, 60*time.Second, "every partition to have a leader every node knows", func() bool {
		leaders = nil
		for _, n := range nodes {
			var tj struct {
				PartitionInfo []struct {
					Leader string `json:"leader"`
				} `json:"partition_info"`
			}
			if getJSON(t, "http://"+n.http+"/v1/topics/"+topic, &tj) != 200 || len(tj.PartitionInfo) != 3 {
				return false
			}
			for i, p := range tj.PartitionInfo {
				if p.Leader == "" || (len(leaders) == 3 && leaders[i] != p.Leader) {
					return false
				}
				if len(leaders) < 3 {
					leaders = append(leaders, p.Leader)
				}
			}
		}
		return true
	})
	return nodes, leaders
}

// openTail opens the console of node at the topic's page and waits for
// its live tail, and for the console to know the cluster's other nodes.
func openTail(t *testing.T, node *logdProc, topic string) *httpapi.BrowserPage {
	t.Helper()
	p := httpapi.OpenPage(t, "http://"+node.http+"/")
	p.WaitText(t, "#topics", topic, 30*time.Second)
	p.Eval(t, `location.hash = "#/topics/`+topic+`"`)
	p.WaitText(t, "#status", "live tail connected", 30*time.Second)
	waitFor(t, 30*time.Second, "the console to learn the other nodes", func() bool {
		return p.Eval(t, `window.logdTail ? logdTail.origins().length : 0`) == "2"
	})
	return p
}

// checkConsoleTail fails unless the console's live tail shows each of
// want once, each partition's records at consecutive offsets from 0 and
// newest first.
func checkConsoleTail(t *testing.T, p *httpapi.BrowserPage, want []string) {
	t.Helper()
	var shown []struct {
		Pos, Value string
	}
	js := `JSON.stringify([...document.querySelectorAll("#tail li")].map(li => ({Pos: li.querySelector(".pos").textContent, Value: li.querySelector(".value").textContent})))`
	if err := json.Unmarshal([]byte(p.Eval(t, js)), &shown); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	offsets := map[int][]int{} // partition -> offsets, top of the list first
	for _, s := range shown {
		count[s.Value]++
		ps, offs, _ := strings.Cut(s.Pos, ":")
		part, _ := strconv.Atoi(ps)
		off, _ := strconv.Atoi(offs)
		offsets[part] = append(offsets[part], off)
	}
	for _, v := range want {
		if count[v] != 1 {
			t.Fatalf("%s shown %d times; the tail shows %+v", v, count[v], shown)
		}
	}
	if len(shown) != len(want) {
		t.Fatalf("the tail shows %d records, want %d: %+v", len(shown), len(want), shown)
	}
	for part, offs := range offsets {
		for i, off := range offs {
			if off != len(offs)-1-i {
				t.Fatalf("partition %d shows offsets %v, want each from %d down to 0 once", part, offs, len(offs)-1)
			}
		}
	}
}

// waitShown waits until the console's live tail shows n records.
func waitShown(t *testing.T, p *httpapi.BrowserPage, n int) {
	t.Helper()
	waitFor(t, 90*time.Second, fmt.Sprintf("the live tail to show %d records", n), func() bool {
		got, _ := strconv.Atoi(p.Eval(t, `document.querySelectorAll("#tail li").length`))
		return got >= n
	})
	time.Sleep(500 * time.Millisecond) // a duplicate would show now
}

// TestConsoleTailSurvivesKill9OfPeer drives the console in chromium on a
// node of a cluster of real processes: a kill -9 of another node, one that
// leads a partition of the topic, during the live tail loses and repeats
// nothing in the console.
func TestConsoleTailSurvivesKill9OfPeer(t *testing.T) {
	nodes, leaders := procCluster(t, "ev")
	serving := nodes[0]
	p := openTail(t, serving, "ev")
	postUntilStored(t, "http://"+serving.http, "ev", "before", keyed("before", 15))
	waitShown(t, p, 15)
	var victim *logdProc
	for _, n := range nodes[1:] {
		if victim == nil || slices.Contains(leaders, n.id) {
			victim = n
		}
	}
	t.Logf("leaders %v; kill -9 of %s during the live tail on %s", leaders, victim.id, serving.id)
	victim.kill()
	postUntilStored(t, "http://"+serving.http, "ev", "after", keyed("after", 15))
	waitShown(t, p, 30)
	checkConsoleTail(t, p, append(values("before", 15), values("after", 15)...))
	if got := p.Eval(t, `document.querySelector("#status").textContent`); got != "live tail connected" {
		t.Fatalf("the status line says %q: the tail should have stayed on its node", got)
	}
}

// TestConsoleTailMovesOnKill9OfItsNode: a kill -9 of the very node whose
// console the browser shows, during the live tail: the console resumes the
// tail on another node of the cluster from the last record it showed, and
// shows every record once.
func TestConsoleTailMovesOnKill9OfItsNode(t *testing.T) {
	nodes, leaders := procCluster(t, "ev")
	serving := nodes[0]
	p := openTail(t, serving, "ev")
	postUntilStored(t, "http://"+nodes[1].http, "ev", "before", keyed("before", 15))
	waitShown(t, p, 15)
	t.Logf("leaders %v; kill -9 of %s, whose console the browser shows", leaders, serving.id)
	serving.kill()
	postUntilStored(t, "http://"+nodes[1].http, "ev", "after", keyed("after", 15))
	waitShown(t, p, 30)
	checkConsoleTail(t, p, append(values("before", 15), values("after", 15)...))
	p.WaitText(t, "#status", "live tail connected via 127.0.0.1:", 10*time.Second)
	dir := os.Getenv("LOGD_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	p.Screenshot(t, dir+"/console-tail-moved.png")
}
