package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/logd/logd/broker"
)

// --cleaner-bytes-per-second and --cleaner-map-entries reach the broker's
// config (unlimited as its "no bound"), their defaults are the broker's,
// and a bad value is refused naming the flag and the form wanted.
func TestServeCleanerFlags(t *testing.T) {
	parse := func(args ...string) (serveFlags, error) {
		var fl serveFlags
		cmd := &cobra.Command{}
		fl.register(cmd.Flags())
		return fl, cmd.Flags().Parse(args)
	}
	cases := []struct {
		args    []string
		rate    int64
		entries int
	}{
		{nil, broker.DefaultCleanerBytesPerSecond, broker.DefaultCleanerMapEntries},
		{[]string{"--cleaner-bytes-per-second", "10MiB", "--cleaner-map-entries", "5000"}, 10 << 20, 5000},
		{[]string{"--cleaner-bytes-per-second", "unlimited"}, -1, broker.DefaultCleanerMapEntries},
	}
	for _, c := range cases {
		fl, err := parse(c.args...)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := fl.nodeConfig()
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if cfg.CleanerBytesPerSecond != c.rate || cfg.CleanerMapEntries != c.entries {
			t.Errorf("%q: rate %d, entries %d; want %d, %d", c.args, cfg.CleanerBytesPerSecond, cfg.CleanerMapEntries, c.rate, c.entries)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cleaner-bytes-per-second", "fast"}, `--cleaner-bytes-per-second "fast": want a positive size such as 64MiB, or unlimited`},
		{[]string{"--cleaner-bytes-per-second", "0"}, "--cleaner-bytes-per-second"},
		{[]string{"--cleaner-map-entries", "0"}, "--cleaner-map-entries 0: want at least 1"},
		{[]string{"--cleaner-map-entries", "-3"}, "--cleaner-map-entries -3"},
	} {
		fl, err := parse(c.args...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fl.nodeConfig(); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", c.args, err, c.want)
		}
	}
}
