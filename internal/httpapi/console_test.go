package httpapi

import (
	"fmt"
	"strings"
	"testing"
	"time"
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
