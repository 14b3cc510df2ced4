package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

// compactionRule is the one statement of what compaction keeps, for topic
// create and alter's help.
const compactionRule = `With --cleanup-policy compact the cleaner keeps, in the closed segments older than --min-compaction-lag, only the newest record of each key (offsets stay: a compacted partition has gaps that readers step over); a record with a null value is a tombstone, kept --delete-retention after its timestamp, then removed with its key. A compacted topic refuses records without a key. compact,delete also applies the retention limits. See docs/compaction.md.`

// compactionFlags are the cleanup flags of topic create and alter, as given.
type compactionFlags struct {
	policy, minLag, maxLag, deleteRetention, dirtyRatio string
}

func (c *compactionFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.policy, "cleanup-policy", "", "delete (retention only), compact (keep the newest record of each key), or compact,delete (default delete)")
	f.StringVar(&c.minLag, "min-compaction-lag", "", "never compact records younger than this: 1h, 0 (default 0)")
	f.StringVar(&c.maxLag, "max-compaction-lag", "", "clean segments older than this whatever the dirty ratio: 1d, or unlimited (default unlimited)")
	f.StringVar(&c.deleteRetention, "delete-retention", "", "how long a tombstone stays readable after its timestamp: 1d, 1h (default 1d)")
	f.StringVar(&c.dirtyRatio, "min-cleanable-dirty-ratio", "", "clean once this share of a partition's closed segments is not yet cleaned: 0 to 1 (default 0.5)")
}

// apply parses the flags that were set into cfg; set reports whether any
// was.
func (c *compactionFlags) apply(cfg *client.TopicConfig) (set bool, err error) {
	if c.policy != "" {
		p := strings.ReplaceAll(c.policy, " ", "")
		if p != "delete" && p != "compact" && p != "compact,delete" && p != "delete,compact" {
			return false, fmt.Errorf("--cleanup-policy: %q: use delete, compact or compact,delete", c.policy)
		}
		cfg.CleanupPolicy = p
	}
	if cfg.MinCompactionLag, err = optionalDuration("--min-compaction-lag", c.minLag); err != nil {
		return false, err
	}
	if cfg.MaxCompactionLag, err = optionalDuration("--max-compaction-lag", c.maxLag); err != nil {
		return false, err
	}
	if cfg.DeleteRetention, err = optionalDuration("--delete-retention", c.deleteRetention); err != nil {
		return false, err
	}
	if c.dirtyRatio != "" {
		r, err := strconv.ParseFloat(c.dirtyRatio, 64)
		if err != nil || !(r > 0 && r <= 1) {
			return false, fmt.Errorf("--min-cleanable-dirty-ratio: %q: use a number above 0, at most 1", c.dirtyRatio)
		}
		cfg.MinCleanableDirtyRatio = r
	}
	return c.policy != "" || c.minLag != "" || c.maxLag != "" || c.deleteRetention != "" || c.dirtyRatio != "", nil
}

// optionalDuration parses a duration flag's value ("": unset).
func optionalDuration(flag, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := parseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", flag, err)
	}
	return d, nil
}

// cleanupLine is a topic's cleanup policy in words, for its description.
func cleanupLine(c client.TopicConfig) string {
	if c.CleanupPolicy == "" || c.CleanupPolicy == "delete" {
		return ""
	}
	return fmt.Sprintf("; cleanup %s, tombstones kept %s, min lag %s", c.CleanupPolicy,
		formatDuration(c.DeleteRetention), formatDuration(c.MinCompactionLag))
}
