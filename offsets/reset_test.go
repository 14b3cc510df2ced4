package offsets

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseResetSpec(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want ResetSpec
	}{
		{"earliest", ResetSpec{Kind: ResetEarliest}},
		{" LATEST ", ResetSpec{Kind: ResetLatest}},
		{"0", ResetSpec{Kind: ResetOffset, Offset: 0}},
		{"1234", ResetSpec{Kind: ResetOffset, Offset: 1234}},
		{"2026-01-02T15:04:05Z", ResetSpec{Kind: ResetTime, Time: at}},
		{"2026-01-02T16:04:05.5+01:00", ResetSpec{Kind: ResetTime, Time: at.Add(500 * time.Millisecond)}},
		{"-90m", ResetSpec{Kind: ResetAgo, Ago: 90 * time.Minute}},
		{"-1h30m", ResetSpec{Kind: ResetAgo, Ago: 90 * time.Minute}},
		{"-2d", ResetSpec{Kind: ResetAgo, Ago: 48 * time.Hour}},
		{"-1d12h", ResetSpec{Kind: ResetAgo, Ago: 36 * time.Hour}},
		{"-500ms", ResetSpec{Kind: ResetAgo, Ago: 500 * time.Millisecond}},
	}
	for _, tt := range tests {
		got, err := ParseResetSpec(tt.in)
		if err != nil {
			t.Errorf("ParseResetSpec(%q): %v", tt.in, err)
			continue
		}
		if got.Kind != tt.want.Kind || got.Offset != tt.want.Offset || got.Ago != tt.want.Ago || !got.Time.Equal(tt.want.Time) {
			t.Errorf("ParseResetSpec(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		// String reads back as the same spec.
		again, err := ParseResetSpec(got.String())
		if err != nil || again.Kind != got.Kind || again.Offset != got.Offset || again.Ago != got.Ago || !again.Time.Equal(got.Time) {
			t.Errorf("ParseResetSpec(%q.String() = %q) = %+v, %v", tt.in, got.String(), again, err)
		}
	}
}

func TestParseResetSpecErrors(t *testing.T) {
	tests := []struct{ in, mention string }{
		{"", "empty"},
		{"first", "earliest, latest"},
		{"-5", "negative offset"},
		{"-", "earliest, latest"},
		{"-0s", "positive"},
		{"--5m", "double negative"},
		{"-5x", "unknown unit"},
		{"-1.5d", "whole number"},
		{"99999999999999999999", "out of range"},
		{"2026-01-02", "RFC 3339"},
		{"-200000d", "too many days"},
		{"-106751d24h", "too long"},
	}
	for _, tt := range tests {
		_, err := ParseResetSpec(tt.in)
		if !errors.Is(err, ErrInvalidReset) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("ParseResetSpec(%q) = %v, want ErrInvalidReset mentioning %q", tt.in, err, tt.mention)
		}
	}
}

// fakeLog holds records at offsets [start, hw) with timestamps tsBase +
// 1000*offset ms (one record a second).
func fakeLog(start, hw, tsBase int64) LogFuncs {
	return LogFuncs{
		Start: func() int64 { return start },
		HW:    func() int64 { return hw },
		ForTime: func(ts int64) (int64, error) {
			if ts <= tsBase+1000*start {
				return start, nil
			}
			off := (ts - tsBase + 999) / 1000
			return min(off, hw), nil
		},
	}
}

func TestResetResolve(t *testing.T) {
	now := time.UnixMilli(1_000_000 + 1000*100) // the time of offset 100
	l := fakeLog(20, 100, 1_000_000)
	tests := []struct {
		spec string
		want Resolution
	}{
		{"earliest", Resolution{Offset: 20, Requested: 20}},
		{"latest", Resolution{Offset: 100, Requested: 100}},
		{"50", Resolution{Offset: 50, Requested: 50}},
		{"20", Resolution{Offset: 20, Requested: 20}},
		{"100", Resolution{Offset: 100, Requested: 100}},
		// Kafka's clamp, reported.
		{"5", Resolution{Offset: 20, Clamped: true, Requested: 5}},
		{"500", Resolution{Offset: 100, Clamped: true, Requested: 500}},
		{"-30s", Resolution{Offset: 70, Requested: 70}},
		{"-29500ms", Resolution{Offset: 71, Requested: 71}}, // first record at or after
		{"-1h", Resolution{Offset: 20, Requested: 20}},      // before the log start
		{"-1d", Resolution{Offset: 20, Requested: 20}},
		{time.UnixMilli(1_000_000 + 1000*42).UTC().Format(time.RFC3339), Resolution{Offset: 42, Requested: 42}},
		{"2099-01-01T00:00:00Z", Resolution{Offset: 100, Requested: 100}}, // after every record
	}
	for _, tt := range tests {
		spec, err := ParseResetSpec(tt.spec)
		if err != nil {
			t.Fatalf("parse %q: %v", tt.spec, err)
		}
		got, err := spec.Resolve(now, l)
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q) = %+v, %v, want %+v", tt.spec, got, err, tt.want)
		}
	}
}

func TestResetResolveErrors(t *testing.T) {
	boom := errors.New("boom")
	l := LogFuncs{
		Start:   func() int64 { return 0 },
		HW:      func() int64 { return 10 },
		ForTime: func(int64) (int64, error) { return 0, boom },
	}
	if _, err := (ResetSpec{Kind: ResetAgo, Ago: time.Minute}).Resolve(time.Now(), l); !errors.Is(err, boom) {
		t.Fatalf("offset-for-time error: %v, want it wrapped", err)
	}
	if _, err := (ResetSpec{Kind: ResetOffset, Offset: -1}).Resolve(time.Now(), l); !errors.Is(err, ErrInvalidReset) {
		t.Fatalf("negative offset: %v", err)
	}
	if _, err := (ResetSpec{}).Resolve(time.Now(), l); !errors.Is(err, ErrInvalidReset) {
		t.Fatalf("zero spec: %v", err)
	}
}

// Any input either fails with ErrInvalidReset or parses to a spec whose
// String reads back as the same spec.
func FuzzParseResetSpec(f *testing.F) {
	for _, s := range []string{"earliest", "latest", "42", "-1h", "-2d", "-1d12h", "2026-01-02T15:04:05Z", "-", "--1h", "-9999999d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := ParseResetSpec(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidReset) {
				t.Fatalf("ParseResetSpec(%q) error %v does not wrap ErrInvalidReset", s, err)
			}
			return
		}
		switch spec.Kind {
		case ResetOffset:
			if spec.Offset < 0 {
				t.Fatalf("ParseResetSpec(%q) = negative offset %d", s, spec.Offset)
			}
		case ResetAgo:
			if spec.Ago <= 0 {
				t.Fatalf("ParseResetSpec(%q) = non-positive duration %v", s, spec.Ago)
			}
		}
		again, err := ParseResetSpec(spec.String())
		if err != nil || again.Kind != spec.Kind || again.Offset != spec.Offset || again.Ago != spec.Ago || !again.Time.Equal(spec.Time) {
			t.Fatalf("ParseResetSpec(%q) = %+v; its String %q reads back as %+v, %v", s, spec, spec.String(), again, err)
		}
	})
}
