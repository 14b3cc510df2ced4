package httpapi

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeProduceBody: any body decodes or fails with errBadBody, never
// panics, and an accepted body is UTF-8 and its records are within the
// limits, their strings the exact bytes sent (no U+FFFD put in).
func FuzzDecodeProduceBody(f *testing.F) {
	for _, s := range []string{
		`{"records": [{"key": "k", "value": "v", "headers": {"h": "x"}, "partition": 1}]}`,
		`{"records": [{"value": {"base64": "AAE="}}, {"key": null, "value": null}]}`,
		`{"records": [`, `{"records": {}}`, `{}`, `null`, `[]`, `{"records": [{"value": {"base64": 1}}]}`,
		`{"records": [{"headers": {"a": null}}]}`, `{"records": [{"partition": -1}]} x`,
		"{\"records\": [{\"value\": \"\xff\"}]}", `{"records": [{"value": "\ud800"}]}`, `{"records": [{"key": "\ud83d\ude00"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		b, err := decodeProduceBody(strings.NewReader(body))
		if err != nil {
			if !errors.Is(err, errBadBody) {
				t.Fatalf("error %v does not wrap errBadBody", err)
			}
			return
		}
		if len(b.Records) == 0 || len(b.Records) > maxRecordsPerRequest {
			t.Fatalf("accepted %d records", len(b.Records))
		}
		if !utf8.ValidString(body) {
			t.Fatalf("accepted a body that is not UTF-8: %q", body)
		}
		for _, r := range b.Records {
			for _, f := range []bytesField{r.Key, r.Value} {
				// A base64 value may hold U+FFFD's bytes; an escape may name it.
				if bytes.ContainsRune(f.b, utf8.RuneError) && !strings.Contains(body, "base64") &&
					!strings.Contains(strings.ToLower(body), `\ufffd`) && !strings.ContainsRune(body, utf8.RuneError) {
					t.Fatalf("a replacement character appeared in %q from %q", f.b, body)
				}
			}
			if r.Partition != nil && *r.Partition < 0 {
				t.Fatalf("accepted partition %d", *r.Partition)
			}
		}
	})
}

// FuzzParsePosition: any event id parses or fails, never panics, and a
// parsed one formats back to an id that parses to the same position.
func FuzzParsePosition(f *testing.F) {
	for _, s := range []string{"0:1", "0:42,1:17,2:9", "", "0:1,0:2", "x", "1:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		m, err := parsePosition(id)
		if err != nil {
			return
		}
		var p position
		p.parts = slices.Sorted(maps.Keys(m))
		for _, part := range p.parts {
			p.next = append(p.next, m[part])
		}
		again, err := parsePosition(p.String())
		if err != nil || len(again) != len(m) {
			t.Fatalf("%q -> %q -> %v, %v", id, p.String(), again, err)
		}
		for k, v := range m {
			if again[k] != v {
				t.Fatalf("%q: partition %d %d became %d", id, k, v, again[k])
			}
		}
	})
}
