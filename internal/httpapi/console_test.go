package httpapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/offsets"
)

// TestConsoleTailFilterOrderAndPrettyJSON, in chromium: the live tail
// shows replayed history newest first in time order across partitions;
// the key filter hides what does not match and drops nothing (records
// that arrive while it is set show when it is cleared); Pretty JSON
// indents a JSON value.
func TestConsoleTailFilterOrderAndPrettyJSON(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 2)
	srv, _ := serve(t, f, Config{})
	produce := func(part int, value string) {
		t.Helper()
		body := fmt.Sprintf(`{"records": [{"key": "k%d", "value": %q, "partition": %d}]}`, part, value, part)
		if st := do(t, "POST", srv.URL+"/v1/topics/t/records", body, nil, nil); st != 200 {
			t.Fatalf("produce: %d", st)
		}
		time.Sleep(5 * time.Millisecond) // the next record a later millisecond
	}
	// Partition 1's two records are read together, partition 0's between
	// them in time.
	produce(1, "first")
	produce(0, "second")
	produce(1, "third")
	p := openPage(t, srv.URL+"/")
	p.waitText(t, "#topics", "t", 10*time.Second)
	p.eval(t, `location.hash = "#/topics/t"`)
	p.waitText(t, "#status", "live tail connected", 10*time.Second)
	p.waitText(t, "#tail", "first", 5*time.Second)
	p.waitText(t, "#tail", "second", 5*time.Second)
	values := `[...document.querySelectorAll("#tail li")].filter(li => !li.hidden).map(li => li.querySelector(".value").textContent).join(" ")`
	if got := p.eval(t, values); got != "third second first" {
		t.Fatalf("the tail shows %q, want the newest first: third second first", got)
	}

	p.eval(t, `const f = document.querySelector("#key-filter"); f.value = "k0"; f.dispatchEvent(new Event("input"))`)
	if got := p.eval(t, values); got != "second" {
		t.Fatalf("filtered by k0 the tail shows %q, want second", got)
	}
	produce(1, "while-filtered")
	produce(0, `{"a": 1, "b": [2]}`)
	p.waitText(t, "#tail", `"a": 1`, 5*time.Second)
	p.eval(t, `const g = document.querySelector("#key-filter"); g.value = ""; g.dispatchEvent(new Event("input"))`)
	if got := p.eval(t, values); !strings.HasPrefix(got, `{"a": 1, "b": [2]} while-filtered third`) {
		t.Fatalf("with the filter cleared the tail shows %q, want the record that arrived while it was set", got)
	}

	p.eval(t, `document.querySelector("#pretty-json").click()`)
	want := "{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}"
	if got := p.eval(t, `document.querySelector("#tail pre.json").textContent`); got != want {
		t.Fatalf("the pretty view shows %q, want %q", got, want)
	}
}

// TestReadRecordsFromTime: GET records with time= starts at the first
// record at or after it (the high watermark when none is that late);
// time= with offset=, or a time that does not parse, is 400.
func TestReadRecordsFromTime(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 1)
	srv, _ := serve(t, f, Config{})
	stamps := seekTopic(t, srv.URL)
	var ans readAnswer
	if st := do(t, "GET", srv.URL+"/v1/topics/t/records?time="+stamps[3], "", nil, &ans); st != 200 || len(ans.Records) != 2 || ans.Records[0].Offset != 3 {
		t.Fatalf("time=%s: %d %+v, want records 3 and 4", stamps[3], st, ans)
	}
	if st := do(t, "GET", srv.URL+"/v1/topics/t/records?time=2999-01-01T00:00:00Z", "", nil, &ans); st != 200 || len(ans.Records) != 0 || ans.NextOffset != 5 {
		t.Fatalf("a time after every record: %d %+v, want none, next offset 5", st, ans)
	}
	for _, q := range []string{"time=yesterday", "time=" + stamps[0] + "&offset=1"} {
		if st := do(t, "GET", srv.URL+"/v1/topics/t/records?"+q, "", nil, nil); st != 400 {
			t.Fatalf("%s: %d, want 400", q, st)
		}
	}
}

// seekTopic produces 5 records to t's partition 0, each a later
// millisecond, and returns their timestamps.
func seekTopic(t *testing.T, base string) []string {
	t.Helper()
	for i := range 5 {
		if st := do(t, "POST", base+"/v1/topics/t/records", fmt.Sprintf(`{"records": [{"value": "r%d"}]}`, i), nil, nil); st != 200 {
			t.Fatalf("produce: %d", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var ans readAnswer
	do(t, "GET", base+"/v1/topics/t/records", "", nil, &ans)
	var out []string
	for _, r := range ans.Records {
		out = append(out, r.Timestamp)
	}
	if len(out) != 5 {
		t.Fatalf("read %d records back, want 5", len(out))
	}
	return out
}

// TestConsoleBrowseSeeks, in chromium: the record browser reads a
// partition from an offset or from a time, and on with Next.
func TestConsoleBrowseSeeks(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 1)
	srv, _ := serve(t, f, Config{})
	stamps := seekTopic(t, srv.URL)
	p := openPage(t, srv.URL+"/")
	p.waitText(t, "#topics", "t", 10*time.Second)
	p.eval(t, `location.hash = "#/topics/t"`)
	p.waitText(t, "#partitions", "High watermark", 10*time.Second)
	offsets := `[...document.querySelectorAll("#browse-records tbody tr")].map(tr => tr.cells[0].textContent).join(" ")`
	browse := func(from string) {
		t.Helper()
		p.eval(t, fmt.Sprintf(`document.querySelector("#browse").replaceChildren(); document.querySelector("#browse-from").value = %q; document.querySelector("form.browse").requestSubmit()`, from))
		p.waitText(t, "#browse", "high watermark", 5*time.Second)
	}
	browse("2")
	if got := p.eval(t, offsets); got != "2 3 4" {
		t.Fatalf("from offset 2 the browser shows offsets %q", got)
	}
	browse(stamps[3])
	if got := p.eval(t, offsets); got != "3 4" {
		t.Fatalf("from %s the browser shows offsets %q, want 3 4", stamps[3], got)
	}
	do(t, "POST", srv.URL+"/v1/topics/t/records", `{"records": [{"value": "r5"}]}`, nil, nil)
	p.eval(t, `document.querySelector("#browse").replaceChildren(); document.querySelector("#browse-next").click()`)
	p.waitText(t, "#browse", "high watermark", 5*time.Second)
	if got := p.eval(t, offsets); got != "5" {
		t.Fatalf("Next shows offsets %q, want 5", got)
	}
}

// TestConsoleCharts, in chromium: the topics page charts each topic's
// produce and consume rates from the cluster's record counters, summed
// over the nodes, and a group's page its lag over time.
func TestConsoleCharts(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 1)
	counts := func(n1, n2 float64) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.counts = []broker.NodeRecordCounts{
			{Node: "n1", Topics: map[string]broker.RecordCounts{"t": {Produced: n1, Fetched: n1}}},
			{Node: "n2", Topics: map[string]broker.RecordCounts{"t": {Produced: n2}}},
			{Node: "n3", Err: errors.New("did not answer")},
		}
	}
	counts(0, 0)
	srv, _ := serve(t, f, Config{})
	f.CommitOffsets(context.Background(), "", "g", "", -1, []offsets.Committed{{Topic: "t", Offset: 0}})
	p := openPage(t, srv.URL+"/")
	p.waitText(t, "#topics", "t", 10*time.Second)
	p.eval(t, `window.done = false; logdCharts.sample().then(() => window.done = true)`)
	eventually(t, 5*time.Second, "a sample", func() bool { return p.eval(t, "window.done") == "true" })
	time.Sleep(100 * time.Millisecond)
	counts(0, 1000) // only another node appended and served
	p.eval(t, `window.done = false; logdCharts.sample().then(() => window.done = true)`)
	eventually(t, 5*time.Second, "a sample", func() bool { return p.eval(t, "window.done") == "true" })
	time.Sleep(100 * time.Millisecond)
	counts(500, 1000)
	p.eval(t, `window.done = false; logdCharts.sample().then(() => window.done = true)`)
	eventually(t, 5*time.Second, "a sample", func() bool { return p.eval(t, "window.done") == "true" })
	// Per node, summed: n2's 1000 then n1's 500 appended; n1's 500 served
	// (whatever samples the page took itself meanwhile).
	total := `kind => Math.round(logdCharts.rates("t", kind).reduce((sum, r, i) => sum + r * (logdCharts.samples[i + 1].t - logdCharts.samples[i].t) / 1000, 0))`
	if got := p.eval(t, `(`+total+`)("produced") + " " + (`+total+`)("fetched")`); got != "1500 500" {
		t.Fatalf("the rates add up to %s records appended and served, want 1500 500", got)
	}
	p.eval(t, `location.hash = "#/groups"; location.hash = "#/topics"`)
	p.waitText(t, "#topics", "/s", 5*time.Second)
	charts := `[...document.querySelectorAll("#topics .chart")].map(c => c.getAttribute("class") + ":" + c.querySelector("svg").getAttribute("aria-label") + ":" + (Number(c.textContent.replace("/s", "")) > 0)).join(" ")`
	if got := p.eval(t, charts); got != "chart:produce rate of t:true chart:consume rate of t:true" {
		t.Fatalf("the topics page's charts: %s", got)
	}
	p.eval(t, `location.hash = "#/groups/g"`)
	p.waitText(t, "main h1", "Group g", 10*time.Second)
	if got := p.eval(t, `document.querySelectorAll("#lag-chart svg polyline").length`); got != "1" {
		t.Fatalf("the group page has %s lag charts, want 1", got)
	}
}
