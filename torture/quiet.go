package torture

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// QuietWindows are periods in which the workload's clients start nothing
// new while the nemeses go on: the last For of every Every, counted from
// the start of the run (Workload.Run). A busy workload keeps every
// partition active; quiet windows leave them idle under faults, for
// behaviour only an idle partition has (partitions that go to sleep when
// idle). What a client started before a window (a produce in
// flight, its retries) finishes in it, and the clients' own background
// traffic goes on (group heartbeats, a consumer's prefetch after a poll,
// franz-go's metadata refreshes). The checkers are the same. The zero
// value has none.
type QuietWindows struct {
	For, Every time.Duration
}

// ParseQuietWindows parses FOR/EVERY (TORTURE_QUIET), two Go durations
// with 0 < FOR < EVERY, e.g. "12s/30s": quiet 18s-30s, 48s-60s, ... of
// the run. "" is none.
func ParseQuietWindows(s string) (QuietWindows, error) {
	if s == "" {
		return QuietWindows{}, nil
	}
	f, e, ok := strings.Cut(s, "/")
	if !ok {
		return QuietWindows{}, fmt.Errorf("torture: quiet windows %q: want FOR/EVERY, two durations such as 12s/30s (quiet the last 12s of every 30s)", s)
	}
	var q QuietWindows
	var err error
	if q.For, err = time.ParseDuration(f); err != nil {
		return QuietWindows{}, fmt.Errorf("torture: quiet windows %q: FOR: %w", s, err)
	}
	if q.Every, err = time.ParseDuration(e); err != nil {
		return QuietWindows{}, fmt.Errorf("torture: quiet windows %q: EVERY: %w", s, err)
	}
	if err := q.validate(); err != nil {
		return QuietWindows{}, fmt.Errorf("torture: quiet windows %q: %w", s, err)
	}
	return q, nil
}

// validate checks 0 < For < Every, or the zero value: with For >= Every
// the clients would never start anything again.
func (q QuietWindows) validate() error {
	switch {
	case q == QuietWindows{}:
		return nil
	case q.For <= 0:
		return fmt.Errorf("FOR is %s, want it > 0", q.For)
	case q.For >= q.Every:
		return fmt.Errorf("FOR (%s) must be shorter than EVERY (%s), or the clients never run", q.For, q.Every)
	}
	return nil
}

// String is FOR/EVERY, "" for none.
func (q QuietWindows) String() string {
	if q == (QuietWindows{}) {
		return ""
	}
	return q.For.String() + "/" + q.Every.String()
}

// remaining is how much of a quiet window is left at elapsed since the run
// began: the windows are [k*Every - For, k*Every) for k = 1, 2, ...; 0
// outside them (and always for the zero value).
func (q QuietWindows) remaining(elapsed time.Duration) time.Duration {
	if q.Every <= 0 || elapsed < 0 {
		return 0
	}
	left := q.Every - elapsed%q.Every
	if left > q.For {
		return 0
	}
	return left
}

// waitQuiet waits out the quiet window the run is in, if any, before a
// client starts its next operation. It reports whether ctx is still live:
// false means the run is over and nothing should start.
func (w *Workload) waitQuiet(ctx context.Context) bool {
	if !w.started.IsZero() {
		if d := w.cfg.Quiet.remaining(time.Since(w.started)); d > 0 {
			sleep(ctx, d)
		}
	}
	return ctx.Err() == nil
}
