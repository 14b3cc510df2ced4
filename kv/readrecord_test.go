package kv

import (
	"testing"

	"github.com/logd/logd/internal/batch"
)

// A record a get returned keeps its key, value and headers whatever the
// gets after it read: it aliases nothing of its read.
func TestGetRecordsAreTheirOwn(t *testing.T) {
	l := &memLog{}
	s := New(openDB(t))
	p := Partition{Topic: "t", ID: 0, Incarnation: 1, Log: l}
	for _, k := range []string{"a", "b", "c"} {
		r := rec(k, k+"-value")
		r.Headers = []batch.Header{{Key: k + "-header", Value: []byte(k + "-hv")}}
		l.put(r)
	}
	held := map[string]Record{}
	for range 3 {
		for _, k := range []string{"a", "b", "c"} {
			r, ok := mustGet(t, s, p, k)
			if !ok {
				t.Fatalf("get %q: not found", k)
			}
			held[k] = r
		}
	}
	for k, r := range held {
		if string(r.Key) != k || string(r.Value) != k+"-value" || len(r.Headers) != 1 ||
			r.Headers[0].Key != k+"-header" || string(r.Headers[0].Value) != k+"-hv" {
			t.Fatalf("record of %q changed after later gets: key %q value %q headers %+v", k, r.Key, r.Value, r.Headers)
		}
	}
}
