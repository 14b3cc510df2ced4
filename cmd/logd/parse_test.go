package main

import (
	"testing"
	"time"

	"github.com/logd/logd/client"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"0", 0, false},
		{"1048576", 1 << 20, false},
		{"100MB", 100_000_000, false},
		{"100mb", 100_000_000, false},
		{"1GiB", 1 << 30, false},
		{"1.5GiB", 3 << 29, false},
		{"64K", 64 << 10, false},
		{"512 MiB", 512 << 20, false},
		{"10B", 10, false},
		{"unlimited", client.Unlimited, false},
		{"-1", client.Unlimited, false},
		{"", 0, true},
		{"1.5", 0, true},
		{"12XB", 0, true},
		{"-5MB", 0, true},
		{"1e3", 0, true},
		{"99999999TiB", 0, true},
	} {
		got, err := parseSize(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("parseSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"7d", 7 * 24 * time.Hour, false},
		{"1d12h", 36 * time.Hour, false},
		{"2w", 14 * 24 * time.Hour, false},
		{"90m", 90 * time.Minute, false},
		{"1.5d", 36 * time.Hour, false},
		{"500ms", 500 * time.Millisecond, false},
		{"unlimited", client.Unlimited, false},
		{"-1", client.Unlimited, false},
		{"7", 0, true},
		{"-7d", 0, true},
		{"d", 0, true},
		{"7days", 0, true},
	} {
		got, err := parseDuration(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParsePosition(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want client.Position
		err  bool
	}{
		{"earliest", client.Earliest(), false},
		{"latest", client.Latest(), false},
		{"42", client.AtOffset(42), false},
		{"0", client.AtOffset(0), false},
		{"2025-02-28T10:00:00Z", client.AtTime(time.Date(2025, 2, 28, 10, 0, 0, 0, time.UTC)), false},
		{"-1h", client.AtTime(now.Add(-time.Hour)), false},
		{"-7d", client.AtTime(now.Add(-7 * 24 * time.Hour)), false},
		{"-5", client.Position{}, true},
		{"yesterday", client.Position{}, true},
		{"2025-02-28", client.Position{}, true},
	} {
		got, err := parsePosition(tc.in, now)
		if (err != nil) != tc.err || (!tc.err && got.String() != tc.want.String()) {
			t.Errorf("parsePosition(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestFormatSizeAndDuration(t *testing.T) {
	for in, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 128 << 20: "128 MiB", -1: "unlimited"} {
		if got := formatSize(in); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[time.Duration]string{
		7 * 24 * time.Hour: "7d", 36 * time.Hour: "1d12h", 90 * time.Minute: "1h30m",
		time.Second: "1s", 10 * time.Second: "10s", 1500 * time.Millisecond: "1.5s", -1: "unlimited",
	} {
		if got := formatDuration(in); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", in, got, want)
		}
	}
}

// The flag parsers never panic, and what they accept is a valid limit.
func FuzzParseSizeAndDuration(f *testing.F) {
	for _, s := range []string{"1GiB", "100MB", "1.5G", "7d", "1d12h", "2w", "unlimited", "-1", "", "9999999999999TiB", "1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := parseSize(s); err == nil && n < client.Unlimited {
			t.Fatalf("parseSize(%q) = %d", s, n)
		}
		if d, err := parseDuration(s); err == nil && d < client.Unlimited {
			t.Fatalf("parseDuration(%q) = %v", s, d)
		}
		if pr, err := formatPrinter(s); err == nil {
			render(t, pr, sample)
		}
	})
}
