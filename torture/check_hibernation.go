package torture

import (
	"strings"
	"time"
)

// hibernateFlag is the `logd serve` flag that puts an idle partition's
// Raft group to sleep on every replica after that long (0: never; absent:
// logd's default, a minute, which a busy workload may never reach).
const hibernateFlag = "partition-hibernate-after"

// hibernateAfter is the --partition-hibernate-after that serve flags args
// give (-flag or --flag, "=value" or the next argument; the last one
// wins, as with Go's flag package), 0 when absent or not a duration: only
// a run that asks for hibernation must see a sleep (CheckHibernation).
func hibernateAfter(args []string) time.Duration {
	var d time.Duration
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || name != hibernateFlag {
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				break
			}
			i++
			value = args[i]
		}
		v, err := time.ParseDuration(value)
		if err != nil {
			v = 0
		}
		d = v
	}
	return d
}

// CheckHibernation judges whether a run that asked its nodes to put idle
// partitions to sleep (--partition-hibernate-after > 0 in serveArgs) saw
// any replica sleep: sleeps is how many times one did over the run (see
// Report.ReplicaSleeps; nil when no node exported the counter). With none
// the run proved nothing about hibernation, whatever the other checkers
// say, so it is Invalid. nil when the run did not ask: then the counts
// are only informational.
func CheckHibernation(serveArgs []string, sleeps, wakes *int64) *Verdict {
	after := hibernateAfter(serveArgs)
	if after <= 0 {
		return nil
	}
	v := newVerdict("Hibernation")
	switch {
	case sleeps == nil:
		v.fail(nil, "no replica was seen to sleep: no node's /metrics had %s although the nodes ran with --%s %s; the run proved nothing about hibernation (a logd without the feature, or /metrics unreachable)",
			metricRaftSleeps, hibernateFlag, after)
	case *sleeps == 0:
		v.fail(nil, "no replica ever slept (%s stayed 0 on every node) although the nodes ran with --%s %s: the run proved nothing about hibernation; give the partitions idle time (QUIET=FOR/EVERY with FOR longer than %s)",
			metricRaftSleeps, hibernateFlag, after, after)
	}
	if sleeps != nil {
		v.Counts["sleeps"] = int(*sleeps)
	}
	if wakes != nil {
		v.Counts["wakes"] = int(*wakes)
	}
	return v
}
