package torture

import (
	"strings"
	"testing"
	"time"
)

func TestHibernateAfter(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 0},
		{[]string{"--log-level", "debug"}, 0},
		{[]string{"--partition-hibernate-after", "30s"}, 30 * time.Second},
		{[]string{"--partition-hibernate-after=2m"}, 2 * time.Minute},
		{[]string{"-partition-hibernate-after=5s"}, 5 * time.Second},
		{[]string{"--partition-hibernate-after", "0"}, 0},
		{[]string{"--partition-hibernate-after=30s", "--partition-hibernate-after=0s"}, 0}, // the last wins
		{[]string{"--partition-hibernate-after=0", "--partition-hibernate-after", "1s"}, time.Second},
		{[]string{"--partition-hibernate-after"}, 0},
		{[]string{"--partition-hibernate-after=soon"}, 0},
		{[]string{"partition-hibernate-after=30s"}, 0}, // not a flag
		{[]string{"--partition-hibernate-afterwards=30s"}, 0},
	} {
		if got := hibernateAfter(tc.args); got != tc.want {
			t.Errorf("hibernateAfter(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
}

func TestCheckHibernation(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	on := []string{"--partition-hibernate-after", "10s"}
	for _, tc := range []struct {
		name          string
		args          []string
		sleeps, wakes *int64
		want          Result // "": no verdict
		problem       string
	}{
		{"not asked, no counters", nil, nil, nil, "", ""},
		{"not asked, no sleep", []string{"--log-level", "debug"}, n(0), n(0), "", ""},
		{"asked with 0", []string{"--partition-hibernate-after=0s"}, n(0), n(0), "", ""},
		{"asked, slept", on, n(2309), n(2045), Valid, ""},
		{"asked, never slept", on, n(0), n(0), Invalid, "no replica ever slept"},
		{"asked, counter never read", on, nil, nil, Invalid, "no replica was seen to sleep"},
	} {
		v := CheckHibernation(tc.args, tc.sleeps, tc.wakes)
		if tc.want == "" {
			if v != nil {
				t.Errorf("%s: verdict %s, want none", tc.name, v)
			}
			continue
		}
		if v == nil || v.Result != tc.want {
			t.Errorf("%s: verdict %v, want %s", tc.name, v, tc.want)
			continue
		}
		if tc.problem != "" && (len(v.Problems) != 1 || !strings.Contains(v.Problems[0], tc.problem) || !strings.Contains(v.Problems[0], "proved nothing about hibernation")) {
			t.Errorf("%s: problems %q, want one saying %q", tc.name, v.Problems, tc.problem)
		}
		if tc.sleeps != nil && v.Counts["sleeps"] != int(*tc.sleeps) {
			t.Errorf("%s: counts %v, want sleeps %d", tc.name, v.Counts, *tc.sleeps)
		}
	}
}

// TestReportHibernationVerdict: a run asked to hibernate whose replicas
// never slept is INVALID whatever the other checkers say, and the report
// prints the counts when it has them.
func TestReportHibernationVerdict(t *testing.T) {
	zero, sleeps, wakes := int64(0), int64(2309), int64(2045)
	r := &Report{ServeArgs: []string{"--partition-hibernate-after=10s"}, ReplicaSleeps: &sleeps, ReplicaWakes: &wakes}
	r.check(nil, LinearizableOptions{})
	base := r.Valid // what the checkers make of an empty history
	if last := r.Verdicts[len(r.Verdicts)-1]; last.Checker != "Hibernation" || !last.OK() {
		t.Fatalf("verdicts end with %s, want Hibernation valid", last)
	}
	if !strings.Contains(r.Text(), "replica sleeps / wakes: 2309 / 2045\n") {
		t.Errorf("report does not count sleeps and wakes:\n%s", r.Text())
	}
	r = &Report{ServeArgs: r.ServeArgs, ReplicaSleeps: &zero, ReplicaWakes: &zero}
	r.check(nil, LinearizableOptions{})
	if r.Valid || !base {
		t.Errorf("valid %v with no sleep, %v with sleeps: want false, true", r.Valid, base)
	}
	if !strings.HasPrefix(r.Text(), "logd torture: INVALID") || !strings.Contains(r.Text(), "no replica ever slept") {
		t.Errorf("report of a run that never slept:\n%s", r.Text())
	}
	r = &Report{}
	r.check(nil, LinearizableOptions{})
	if strings.Contains(r.Text(), "replica sleeps") || len(r.Verdicts) != len(CheckAll(nil, CheckOptions{})) {
		t.Errorf("a run without the counters nor the flag mentions hibernation:\n%s", r.Text())
	}
}
