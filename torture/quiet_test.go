package torture

import (
	"strings"
	"testing"
	"time"
)

func TestParseQuietWindows(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want QuietWindows
		err  string // a part of the error; "" for none
	}{
		{in: "", want: QuietWindows{}},
		{in: "12s/30s", want: QuietWindows{For: 12 * time.Second, Every: 30 * time.Second}},
		{in: "500ms/1m", want: QuietWindows{For: 500 * time.Millisecond, Every: time.Minute}},
		{in: "29.999s/30s", want: QuietWindows{For: 29999 * time.Millisecond, Every: 30 * time.Second}},
		{in: "12s", err: "want FOR/EVERY"},
		{in: "12/30", err: "FOR"},
		{in: "12s/x", err: "EVERY"},
		{in: "12s/30s/5s", err: "EVERY"},
		{in: "0s/30s", err: "want it > 0"},
		{in: "-1s/30s", err: "want it > 0"},
		{in: "30s/30s", err: "shorter than EVERY"},
		{in: "31s/30s", err: "shorter than EVERY"},
		{in: "1s/-5s", err: "shorter than EVERY"},
	} {
		got, err := ParseQuietWindows(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("ParseQuietWindows(%q): %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseQuietWindows(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.err)
		case tc.err == "" && got != tc.want:
			t.Errorf("ParseQuietWindows(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if back, err := ParseQuietWindows(got.String()); err != nil || back != got {
			t.Errorf("ParseQuietWindows(%q).String() = %q, which parses to %+v, %v", tc.in, got.String(), back, err)
		}
	}
}

// The windows are [k*Every - For, k*Every): quiet from 18s up to (not
// including) 30s for 12s/30s, and again from 48s.
func TestQuietWindowsRemaining(t *testing.T) {
	q := QuietWindows{For: 12 * time.Second, Every: 30 * time.Second}
	ms := time.Millisecond
	for _, tc := range []struct{ elapsed, want time.Duration }{
		{-time.Second, 0},
		{0, 0},
		{10 * time.Second, 0},
		{18*time.Second - ms, 0},
		{18 * time.Second, 12 * time.Second},
		{25 * time.Second, 5 * time.Second},
		{30*time.Second - ms, ms},
		{30 * time.Second, 0},
		{31 * time.Second, 0},
		{48*time.Second - ms, 0},
		{48 * time.Second, 12 * time.Second},
		{59 * time.Second, time.Second},
		{60 * time.Second, 0},
		{10*time.Minute + 20*time.Second, 10 * time.Second},
	} {
		if got := q.remaining(tc.elapsed); got != tc.want {
			t.Errorf("12s/30s at %s: %s of quiet left, want %s", tc.elapsed, got, tc.want)
		}
	}
	for _, e := range []time.Duration{0, 18 * time.Second, 29 * time.Second, time.Hour - time.Second} {
		if got := (QuietWindows{}).remaining(e); got != 0 {
			t.Errorf("no quiet windows at %s: %s left, want 0", e, got)
		}
	}
}

// A QuietWindows set in code is checked as the parser checks it: with For
// >= Every the clients would never start anything again.
func TestQuietWindowsValidate(t *testing.T) {
	for _, q := range []QuietWindows{{For: time.Second}, {For: 2 * time.Second, Every: time.Second}, {Every: time.Second}} {
		if q.validate() == nil {
			t.Errorf("%+v accepted", q)
		}
	}
	if err := (QuietWindows{For: time.Second, Every: 2 * time.Second}).validate(); err != nil {
		t.Errorf("1s/2s: %v", err)
	}
}

// The report's header names both knobs when they are set, and nothing
// more when they are not.
func TestReportHeaderNamesKnobs(t *testing.T) {
	r := &Report{Seed: 5, Nodes: 3, Duration: "1m30s", Valid: true, Quiet: "10s/30s", ServeArgs: []string{"--log-level", "debug"}}
	head, _, _ := strings.Cut(r.Text(), "\n\n")
	for _, want := range []string{"logd torture: VALID — seed 5", "quiet windows: 10s/30s", "extra logd serve flags: --log-level debug"} {
		if !strings.Contains(head, want) {
			t.Errorf("header %q does not say %q", head, want)
		}
	}
	r.Quiet, r.ServeArgs = "", nil
	if head, _, _ := strings.Cut(r.Text(), "\n\n"); strings.Contains(head, "\n") {
		t.Errorf("header without knobs is %q, want one line", head)
	}
}
