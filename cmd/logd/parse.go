package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/logd/logd/client"
	"github.com/logd/logd/offsets"
)

// sizeUnits are the suffixes parseSize accepts: SI (1 kB = 1000 B) and IEC
// (1 KiB = 1024 B); single letters K, M, G, T are IEC.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
}

var sizePattern = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)$`)

// parseSize parses a byte size such as 1048576, 100MB, 1GiB or 1.5G, and
// "unlimited" (or -1) as client.Unlimited.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "unlimited" || s == "-1" {
		return client.Unlimited, nil
	}
	m := sizePattern.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("invalid size %q: use a number of bytes with an optional unit, such as 512MiB, 100MB or 1GiB (or unlimited)", s)
	}
	unit, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)", s, m[2])
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	v *= unit
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("invalid size %q: not a whole number of bytes", s)
	}
	return int64(v), nil
}

var dayPattern = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?)(d|w)`)

// parseDuration parses a Go duration extended with days and weeks (7d,
// 1d12h, 2w, 90m), and "unlimited" (or -1) as client.Unlimited.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "unlimited" || s == "-1" {
		return client.Unlimited, nil
	}
	var bad error
	expanded := dayPattern.ReplaceAllStringFunc(s, func(part string) string {
		m := dayPattern.FindStringSubmatch(part)
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			bad = err
		}
		hours := v * 24
		if m[2] == "w" {
			hours *= 7
		}
		return strconv.FormatFloat(hours, 'f', -1, 64) + "h"
	})
	d, err := time.ParseDuration(expanded)
	if err != nil || bad != nil || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("invalid duration %q: use a number with a unit, such as 7d, 12h, 30m or 1d12h (or unlimited)", s)
	}
	return d, nil
}

// parsePosition parses earliest, latest, an offset, an RFC 3339 time or
// -DURATION (that long before now) with offsets.ParseResetSpec, the one
// grammar of positions (consume --from, offsets reset --to).
func parsePosition(s string, now time.Time) (client.Position, error) {
	spec, err := offsets.ParseResetSpec(s)
	if err != nil {
		// Not only resets parse positions: say "position".
		return client.Position{}, fmt.Errorf("invalid position %s", strings.TrimPrefix(err.Error(), offsets.ErrInvalidReset.Error()+": "))
	}
	switch spec.Kind {
	case offsets.ResetEarliest:
		return client.Earliest(), nil
	case offsets.ResetLatest:
		return client.Latest(), nil
	case offsets.ResetOffset:
		return client.AtOffset(spec.Offset), nil
	case offsets.ResetTime:
		return client.AtTime(spec.Time), nil
	case offsets.ResetAgo:
		return client.AtTime(now.Add(-spec.Ago)), nil
	}
	return client.Position{}, fmt.Errorf("unsupported position %q", s)
}

// formatSize renders n bytes for people: 512 B, 1.5 MiB.
func formatSize(n int64) string {
	if n < 0 {
		return "unlimited"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + []string{"KiB", "MiB", "GiB", "TiB", "PiB"}[exp]
}

// formatDuration renders d with days: 7d, 1d12h, 30m, 1.5s.
func formatDuration(d time.Duration) string {
	if d < 0 {
		return "unlimited"
	}
	if d == 0 {
		return "0s"
	}
	days := d / (24 * time.Hour)
	rest := d % (24 * time.Hour)
	var b strings.Builder
	if days > 0 {
		fmt.Fprintf(&b, "%dd", days)
	}
	if rest > 0 {
		s := rest.String() // 12h0m0s -> 12h, 1h30m0s -> 1h30m
		if strings.HasSuffix(s, "m0s") {
			s = s[:len(s)-2]
		}
		if strings.HasSuffix(s, "h0m") {
			s = s[:len(s)-2]
		}
		b.WriteString(s)
	}
	return b.String()
}

// formatCount renders a record count limit.
func formatCount(n int64) string {
	if n < 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}

// parseAcks reads --acks: leader or all, "" for the server's default.
func parseAcks(s string) (client.Acks, error) {
	switch s {
	case "":
		return client.AcksDefault, nil
	case "leader":
		return client.AcksLeader, nil
	case "all":
		return client.AcksAll, nil
	}
	return client.AcksDefault, fmt.Errorf("--acks %q: use leader or all", s)
}
