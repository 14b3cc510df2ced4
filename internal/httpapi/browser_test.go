package httpapi

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// chromium finds the headless browser the console test drives: $CHROMIUM,
// else chromium on PATH (Debian's package; .ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: install it (apt-get install chromium) or set CHROMIUM; .ci/run installs it")
	return ""
}

// browserPage is one page of a headless chromium, driven over the Chrome
// DevTools Protocol (a WebSocket of JSON commands).
type browserPage struct {
	ws *websocket.Conn
	id int
}

// openPage starts headless chromium on 127.0.0.1 (stopped at the test's
// end) and opens pageURL in it.
func openPage(t *testing.T, pageURL string) *browserPage {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, chromium(t), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--window-size=1280,800",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-allow-origins=*", "about:blank")
	// Chromium puts its singleton socket in a directory of its own under
	// TMPDIR and leaves it there when it is stopped: give it a short
	// temporary directory (the socket's path must fit a sockaddr_un),
	// removed at the test's end.
	tmp, err := os.MkdirTemp("", "chromium")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "TMPDIR="+tmp)
	// Chromium's helper processes share its process group: stop them all
	// (politely, then by force) before the profile directory is removed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // any helper left
		os.RemoveAll(tmp)
	})
	// "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID"
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, after, ok := strings.Cut(sc.Text(), "DevTools listening on "); ok {
				found <- after
			}
		}
	}()
	var browserWS string
	select {
	case browserWS = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("chromium did not start its DevTools endpoint within 30s")
	}
	u, _ := url.Parse(browserWS)
	req, _ := http.NewRequest("PUT", "http://"+u.Host+"/json/new?"+pageURL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var target struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&target); err != nil || target.WebSocketDebuggerURL == "" {
		t.Fatalf("new page: %v %+v", err, target)
	}
	ws, err := websocket.Dial(target.WebSocketDebuggerURL, "", "http://127.0.0.1/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return &browserPage{ws: ws}
}

// call sends one DevTools command and returns its result (events that
// arrive meanwhile are skipped).
func (p *browserPage) call(t *testing.T, method string, params any, result any) {
	t.Helper()
	p.id++
	if err := websocket.JSON.Send(p.ws, map[string]any{"id": p.id, "method": method, "params": params}); err != nil {
		t.Fatal(err)
	}
	p.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct{ Message string }
		}
		if err := websocket.JSON.Receive(p.ws, &msg); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if msg.ID != p.id {
			continue
		}
		if msg.Error != nil {
			t.Fatalf("%s: %s", method, msg.Error.Message)
		}
		if result != nil {
			json.Unmarshal(msg.Result, result)
		}
		return
	}
}

// eval returns a JavaScript expression's value as a string.
func (p *browserPage) eval(t *testing.T, expr string) string {
	t.Helper()
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
	}
	p.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	return fmt.Sprint(r.Result.Value)
}

// waitText waits until the element's text contains want.
func (p *browserPage) waitText(t *testing.T, selector, want string, timeout time.Duration) {
	t.Helper()
	expr := fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, selector)
	deadline := time.Now().Add(timeout)
	for {
		got := p.eval(t, expr)
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s shows %q, not %q, after %s", selector, got, want, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *browserPage) screenshot(t *testing.T, path string) {
	t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	p.call(t, "Page.captureScreenshot", map[string]any{"format": "png"}, &r)
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil || len(png) == 0 {
		t.Fatalf("screenshot: %v (%d bytes)", err, len(png))
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the topic page: %s", path)
}

// testConsoleInBrowser: the console lists a topic, and records produced
// while its page is open show in the live tail, as text.
func testConsoleInBrowser(t *testing.T, e env) {
	e.createTopic(t, "browser-topic", 2)
	srv, _ := serve(t, e.core(), Config{})
	p := openPage(t, srv.URL+"/")
	p.waitText(t, "#topics", "browser-topic", 10*time.Second)
	p.eval(t, `location.hash = "#/topics/browser-topic"`)
	p.waitText(t, "#partitions", "High watermark", 10*time.Second)
	p.waitText(t, "#status", "live tail connected", 10*time.Second)
	do(t, "POST", srv.URL+"/v1/topics/browser-topic/records",
		`{"records": [{"key": "k", "value": "seen-in-the-tail"}, {"value": "<b>not markup</b>"}]}`, nil, nil)
	p.waitText(t, "#tail", "seen-in-the-tail", 2*time.Second)
	p.waitText(t, "#tail", "<b>not markup</b>", 2*time.Second)
	if n := p.eval(t, `document.querySelectorAll("#tail b").length`); n != "0" {
		t.Fatalf("a record's value became markup (%s <b> elements)", n)
	}
	consoleWritesOnlyItsOwn(t, p, srv.URL)
	dir := os.Getenv("LOGD_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	p.screenshot(t, filepath.Join(dir, "console-topic.png"))
}

// consoleWritesOnlyItsOwn: the console's produce form writes through the
// guard (same origin, JSON), and a page of another origin cannot write with
// a no-preflight text/plain POST: the browser sends it, the port refuses it.
func consoleWritesOnlyItsOwn(t *testing.T, p *browserPage, base string) {
	t.Helper()
	stored := func() int64 {
		var tj topicJSON
		do(t, "GET", base+"/v1/topics/browser-topic", "", nil, &tj)
		var n int64
		for _, pi := range tj.PartitionInfo {
			n += pi.HighWatermark
		}
		return n
	}
	before := stored()
	p.eval(t, `document.querySelector("#produce-value").value = "from-the-form"; document.querySelector("form.produce").requestSubmit()`)
	p.waitText(t, "#produce-result", "written at", 5*time.Second)
	p.waitText(t, "#tail", "from-the-form", 5*time.Second)
	if n := stored(); n != before+1 {
		t.Fatalf("the console's form stored %d records, want 1", n-before)
	}
	// A page of another origin (another port: same site, not same
	// origin) posts text/plain, which needs no preflight: the browser
	// sends it, the port refuses it.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>another site</title>")
	}))
	defer other.Close()
	p.call(t, "Page.navigate", map[string]any{"url": other.URL + "/"}, nil)
	deadline := time.Now().Add(10 * time.Second)
	for p.eval(t, `document.title + " " + document.readyState`) != "another site complete" {
		if time.Now().After(deadline) {
			t.Fatal("the other page did not load in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.eval(t, fmt.Sprintf(`window.csrf = "pending"; fetch(%q, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
		body: JSON.stringify({records: [{value: "forged"}]})}).then(() => window.csrf = "sent", e => window.csrf = "failed: " + e)`,
		base+"/v1/topics/browser-topic/records"))
	for p.eval(t, `window.csrf`) == "pending" {
		if time.Now().After(deadline) {
			t.Fatal("the cross-origin fetch did not finish in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := p.eval(t, `window.csrf`); got != "sent" {
		t.Fatalf("the cross-origin fetch was not sent: %s", got)
	}
	if n := stored(); n != before+1 {
		t.Fatalf("a cross-origin text/plain POST stored %d records", n-before-1)
	}
}

func TestConsoleInBrowserFake(t *testing.T) { testConsoleInBrowser(t, newFakeEnv(t)) }

// TestAllowedOriginInBrowser: a page of an origin --http-allowed-origins
// names produces with fetch and JSON (a CORS preflight first) and reads
// the answer, in chromium.
func TestAllowedOriginInBrowser(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 1)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>ops app</title>")
	}))
	defer app.Close()
	srv, _ := serveGuarded(t, f, Config{}, []string{app.URL})
	p := openPage(t, app.URL+"/")
	p.waitText(t, "title", "ops app", 10*time.Second)
	p.eval(t, fmt.Sprintf(`window.res = "pending"; fetch(%q, {method: "POST", headers: {"Content-Type": "application/json", "Idempotency-Key": "k1"},
		body: JSON.stringify({records: [{value: "from-the-app"}]})}).then(r => r.json()).then(b => window.res = JSON.stringify(b), e => window.res = "failed: " + e)`,
		srv.URL+"/v1/topics/t/records"))
	deadline := time.Now().Add(10 * time.Second)
	for p.eval(t, `window.res`) == "pending" {
		if time.Now().After(deadline) {
			t.Fatal("the fetch did not finish in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := p.eval(t, `window.res`); !strings.Contains(got, `"offset":0`) {
		t.Fatalf("the allowed origin's fetch: %s", got)
	}
	if n := stored(f, "t"); n != 1 {
		t.Fatalf("%d records stored, want 1", n)
	}
}
