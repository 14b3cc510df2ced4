package main

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/client"
)

var sample = client.ConsumedRecord{
	Topic: "orders", Partition: 2, Offset: 41, Key: []byte("alice"), Value: []byte("paid"),
	Headers:   []client.Header{{Key: "trace", Value: []byte("abc")}, {Key: "v", Value: []byte("2")}},
	Timestamp: time.Date(2025, 3, 1, 12, 0, 0, 5e6, time.UTC),
}

func render(t *testing.T, pr printer, r client.ConsumedRecord) string {
	t.Helper()
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	if err := pr(w, r); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return b.String()
}

func TestFormatPrinter(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{"%s", "paid\n"},
		{"%k=%s", "alice=paid\n"},
		{`%t/%p@%o\t%k\n`, "orders/2@41\talice\n"},
		{"%T %D", "1740830400005 2025-03-01T12:00:00.005Z\n"},
		{"%h", "trace=abc,v=2\n"},
		{"100%% %s", "100% paid\n"},
		{`a\\b \q`, `a\b \q` + "\n"},
		{"", "\n"},
	} {
		pr, err := formatPrinter(tc.format)
		if err != nil {
			t.Fatalf("%q: %v", tc.format, err)
		}
		if got := render(t, pr, sample); got != tc.want {
			t.Errorf("format %q: %q, want %q", tc.format, got, tc.want)
		}
	}
	for _, bad := range []string{"%x", "value %", "%"} {
		if _, err := formatPrinter(bad); err == nil {
			t.Errorf("format %q: no error", bad)
		}
	}
}

func TestJSONPrinter(t *testing.T) {
	got := render(t, jsonPrinter, sample)
	want := `{"topic":"orders","partition":2,"offset":41,"key":"alice","value":"paid","timestamp":"2025-03-01T12:00:00.005Z","headers":{"trace":"abc","v":"2"}}` + "\n"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	bin := sample
	bin.Key, bin.Value, bin.Headers = nil, []byte{0xff, 0x00, 0x10}, nil
	got = render(t, jsonPrinter, bin)
	if !strings.Contains(got, `"key":null`) || !strings.Contains(got, `"value":"/wAQ","value_encoding":"base64"`) {
		t.Fatalf("binary value: %s", got)
	}
	if got := render(t, valuePrinter, sample); got != "paid\n" {
		t.Fatalf("value printer: %q", got)
	}
}
