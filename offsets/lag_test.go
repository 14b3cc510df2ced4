package offsets

import "testing"

func TestLag(t *testing.T) {
	tests := []struct {
		name                    string
		committed, logStart, hw int64
		want                    LagInfo
	}{
		{"caught up", 100, 0, 100, LagInfo{Lag: 0, ResumeAt: 100}},
		{"behind", 40, 0, 100, LagInfo{Lag: 60, ResumeAt: 40}},
		{"at log start", 50, 50, 80, LagInfo{Lag: 30, ResumeAt: 50}},
		{"empty log", 0, 0, 0, LagInfo{Lag: 0, ResumeAt: 0}},
		// docs/architecture.md: lag = HW - committed, including what retention removed.
		{"trimmed", 10, 50, 80, LagInfo{Lag: 70, Trimmed: true, Lost: 40, ResumeAt: 50}},
		{"trimmed to empty log", 10, 80, 80, LagInfo{Lag: 70, Trimmed: true, Lost: 70, ResumeAt: 80}},
		{"one record trimmed", 49, 50, 50, LagInfo{Lag: 1, Trimmed: true, Lost: 1, ResumeAt: 50}},
		// The log was truncated below the commit (leader change): no
		// negative lag, and the consumer's reset rule decides on read.
		{"ahead of HW", 120, 0, 100, LagInfo{Lag: 0, ResumeAt: 120}},
		{"nothing committed", -1, 20, 100, LagInfo{Lag: 80, ResumeAt: 20}},
		{"HW below start is read as start", 5, 10, 3, LagInfo{Lag: 5, Trimmed: true, Lost: 5, ResumeAt: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Lag(tt.committed, tt.logStart, tt.hw); got != tt.want {
				t.Fatalf("Lag(%d, %d, %d) = %+v, want %+v", tt.committed, tt.logStart, tt.hw, got, tt.want)
			}
		})
	}
}
