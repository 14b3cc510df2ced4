package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/logd/logd/routing"
)

// Each printed line's key routes, with the partitioner logd and Kafka
// clients use, to the partition the line names, and every partition has
// exactly one line.
func TestKeyRoutesToItsPartition(t *testing.T) {
	for _, n := range []int{1, 2, 7, 100, 1000} {
		var out bytes.Buffer
		if err := write(&out, n); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != n {
			t.Fatalf("n=%d: %d lines, want %d", n, len(lines), n)
		}
		for i, line := range lines {
			key, value, ok := strings.Cut(line, ":")
			if !ok || value != fmt.Sprint(i) {
				t.Fatalf("n=%d: line %d is %q, want KEY:%d", n, i, line, i)
			}
			if got := routing.ForKey([]byte(key), n); int(got) != i {
				t.Fatalf("n=%d: key %q routes to partition %d, printed for %d", n, key, got, i)
			}
		}
	}
}

// The output for 10 partitions is the one the Python copy of Kafka's
// murmur2 that partitions.sh used before printed (its output for 1000
// partitions was identical too).
func TestOutputMatchesPythonMurmur2(t *testing.T) {
	const want = "k4:0\nk16:1\nk13:2\nk2:3\nk5:4\nk0:5\nk3:6\nk1:7\nk7:8\nk12:9\n"
	var out bytes.Buffer
	if err := write(&out, 10); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Fatalf("partkeys -n 10 printed\n%s\nwant\n%s", out.String(), want)
	}
}
