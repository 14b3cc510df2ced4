package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
	"github.com/logd/logd/routing"
)

func newTopicCmd() *cobra.Command {
	var srv serverFlag
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, alter, trim and delete topics",
	}
	srv.register(cmd, true)
	cmd.AddCommand(newTopicCreateCmd(&srv), newTopicListCmd(&srv), newTopicDescribeCmd(&srv),
		newTopicAlterCmd(&srv), newTopicTrimPrefixCmd(&srv), newTopicDeleteCmd(&srv))
	return cmd
}

// retentionRule is the one statement of what retention deletes: the same
// words in topic create and alter --help, topic describe and the README
// (a test holds them together).
const retentionRule = `Retention deletes whole closed segments only, oldest first, never the active one: a closed segment goes once all its records are older than --retention-time, or once the segments after it still hold at least --retention-bytes and --retention-records. So a partition keeps at least the newest --retention-records records and --retention-bytes bytes, and what shares a segment with them; records stay in the active segment until it rolls, at --segment-bytes or --segment-age.`

// retentionFlags are the policy flags of topic create and alter, as given.
type retentionFlags struct {
	time, bytes, records, segmentBytes, segmentAge string
}

func (r *retentionFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&r.time, "retention-time", "", "delete closed segments whose records are all older: 7d, 12h, 90m, or unlimited (default 7d)")
	f.StringVar(&r.bytes, "retention-bytes", "", "per partition: keep at least this much, deleting older closed segments: 10GiB, 500MB, or unlimited (default unlimited)")
	f.StringVar(&r.records, "retention-records", "", "per partition: keep at least the newest N records, deleting older closed segments, or unlimited (default unlimited)")
	f.StringVar(&r.segmentBytes, "segment-bytes", "", "roll the active segment at this size: 128MiB (default 128MiB)")
	f.StringVar(&r.segmentAge, "segment-age", "", "roll the active segment at this age, so a quiet topic's records can be trimmed: 1d, 12h (default 7d)")
}

// config parses the flags that were set.
func (r *retentionFlags) config() (cfg client.TopicConfig, set bool, err error) {
	if r.time != "" {
		if cfg.RetentionTime, err = parseDuration(r.time); err != nil {
			return cfg, false, fmt.Errorf("--retention-time: %w", err)
		}
		if cfg.RetentionTime == 0 {
			return cfg, false, fmt.Errorf("--retention-time: must be positive (or unlimited)")
		}
	}
	if r.bytes != "" {
		if cfg.RetentionBytes, err = parseSize(r.bytes); err != nil {
			return cfg, false, fmt.Errorf("--retention-bytes: %w", err)
		}
		if cfg.RetentionBytes == 0 {
			return cfg, false, fmt.Errorf("--retention-bytes: must be positive (or unlimited)")
		}
	}
	if r.records != "" {
		if r.records == "unlimited" || r.records == "-1" {
			cfg.RetentionRecords = client.Unlimited
		} else if _, err := fmt.Sscan(r.records, &cfg.RetentionRecords); err != nil || cfg.RetentionRecords <= 0 {
			return cfg, false, fmt.Errorf("--retention-records: invalid count %q: use a positive number or unlimited", r.records)
		}
	}
	if r.segmentAge != "" {
		if cfg.SegmentAge, err = parseDuration(r.segmentAge); err != nil {
			return cfg, false, fmt.Errorf("--segment-age: %w", err)
		}
		if cfg.SegmentAge <= 0 {
			return cfg, false, fmt.Errorf("--segment-age: must be a positive duration such as 1d")
		}
	}
	if r.segmentBytes != "" {
		if cfg.SegmentBytes, err = parseSize(r.segmentBytes); err != nil {
			return cfg, false, fmt.Errorf("--segment-bytes: %w", err)
		}
		if cfg.SegmentBytes <= 0 {
			return cfg, false, fmt.Errorf("--segment-bytes: must be a positive size such as 128MiB")
		}
	}
	return cfg, r.time != "" || r.bytes != "" || r.records != "" || r.segmentBytes != "" || r.segmentAge != "", nil
}

func topicArg(args []string) (string, error) {
	if err := routing.ValidateTopicName(args[0]); err != nil {
		return "", err
	}
	return args[0], nil
}

func newTopicCreateCmd(srv *serverFlag) *cobra.Command {
	var (
		partitions, replicas int32
		ret                  retentionFlags
		cmp                  compactionFlags
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Long:  "Create a topic.\n\n" + retentionRule + "\n\n" + compactionRule,
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := topicArg(args)
			if err != nil {
				return err
			}
			if partitions < 1 {
				return fmt.Errorf("--partitions must be at least 1, not %d", partitions)
			}
			if replicas < 0 {
				return fmt.Errorf("--replicas must be positive, not %d", replicas)
			}
			cfg, _, err := ret.config()
			if err != nil {
				return err
			}
			if _, err := cmp.apply(&cfg); err != nil {
				return err
			}
			return srv.run(func(c *client.Client) error {
				ctx, cancel := srv.setupContext(cmd)
				defer cancel()
				ti, err := c.Admin().CreateTopic(ctx, name, client.TopicOptions{Partitions: partitions, Replicas: replicas, Config: cfg})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "created topic %s: %d partitions, %d replicas, %s\n",
					ti.Name, ti.Partitions, ti.Replicas, policy(ti.Config))
				return nil
			})
		},
	}
	cmd.Flags().Int32Var(&partitions, "partitions", 1, "number of partitions")
	cmd.Flags().Int32Var(&replicas, "replicas", 0, "copies of each partition (default: 1 on a single node, 3 in a cluster)")
	ret.register(cmd)
	cmp.register(cmd)
	return cmd
}

// policy is a topic's retention in one line.
func policy(c client.TopicConfig) string {
	return fmt.Sprintf("retention time %s, bytes %s, records %s; segments of %s",
		formatDuration(c.RetentionTime), formatSize(c.RetentionBytes), formatCount(c.RetentionRecords), formatSize(c.SegmentBytes)) + cleanupLine(c)
}

func newTopicListCmd(srv *serverFlag) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics",
		Long: `List topics. --json prints one object a line: name, partitions, replicas,
created, retention_ms, retention_bytes, retention_records, segment_bytes,
segment_ms (-1: unlimited).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return srv.run(func(c *client.Client) error {
				topics, err := c.Admin().ListTopics(callContext(cmd))
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(cmd.OutOrStdout())
					for _, t := range topics {
						if err := enc.Encode(toTopicJSON(t)); err != nil {
							return err
						}
					}
					return nil
				}
				if len(topics) == 0 {
					fmt.Fprintln(cmd.ErrOrStderr(), "no topics yet: create one with `logd topic create NAME`")
					return nil
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tREPLICAS\tRETENTION-TIME\tRETENTION-BYTES\tRETENTION-RECORDS")
				for _, t := range topics {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", t.Name, t.Partitions, t.Replicas,
						formatDuration(t.Config.RetentionTime), formatSize(t.Config.RetentionBytes), formatCount(t.Config.RetentionRecords))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line")
	return cmd
}

func newTopicDescribeCmd(srv *serverFlag) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a topic's configuration and each partition's offsets, size and segments",
		Long: `Show a topic's configuration and each partition's offsets, size and segments.
--json prints one object: topic (as topic list --json prints it),
retention_rule, and partitions, each with partition, log_start_offset,
high_watermark, records, size_bytes, segments, and in a cluster leader and
replicas.`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := topicArg(args)
			if err != nil {
				return err
			}
			return srv.run(func(c *client.Client) error {
				d, err := c.Admin().DescribeTopic(callContext(cmd), name)
				if err != nil {
					return err
				}
				if asJSON {
					return writeTopicDetailJSON(cmd.OutOrStdout(), d)
				}
				writeTopicDetail(cmd.OutOrStdout(), d)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func writeTopicDetail(w io.Writer, d client.TopicDetail) {
	t := d.Topic
	fmt.Fprintf(w, "topic %s: %d partitions, %d replicas", t.Name, t.Partitions, t.Replicas)
	if !t.Created.IsZero() {
		fmt.Fprintf(w, ", created %s", t.Created.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "\n%s (segments also roll after %s)\n%s\n\n", policy(t.Config), formatDuration(t.Config.SegmentAge), retentionRule)
	cluster := false
	for _, p := range d.Partitions {
		cluster = cluster || p.Leader != ""
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "PARTITION\tLOG-START\tHIGH-WATERMARK\tRECORDS\tSIZE\tSEGMENTS"
	if cluster {
		head += "\tLEADER\tREPLICAS"
	}
	fmt.Fprintln(tw, head)
	for _, p := range d.Partitions {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\t%d", p.Partition, p.LogStartOffset, p.HighWatermark,
			p.HighWatermark-p.LogStartOffset, formatSize(p.SizeBytes), p.Segments)
		if cluster {
			fmt.Fprintf(tw, "\t%s\t%s", p.Leader, strings.Join(p.Replicas, ","))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// keysMove is what adding partitions does to keyed records, stated by
// topic alter --partitions before it acts.
const keysMove = `Adding partitions changes which partition a key goes to: records are routed by a hash of the key over the partition count, so from now on a key's new records may go to another partition than its earlier ones, and per-key order holds only within each partition (as in Kafka). Partitions are only added, never removed. Consumer groups on the topic rebalance and read the new partitions.`

func newTopicAlterCmd(srv *serverFlag) *cobra.Command {
	var (
		ret        retentionFlags
		cmp        compactionFlags
		partitions int32
		yes        bool
	)
	cmd := &cobra.Command{
		Use:   "alter NAME",
		Short: "Change a topic's retention, or add partitions",
		Long: "Change a topic's retention or cleanup policy; it applies at the next retention or cleaner pass, without a restart.\n\n" + retentionRule + "\n\n" + compactionRule +
			"\n\n--partitions N grows the topic to N partitions (more than it has) and returns once they take writes. " + keysMove + " It asks for --yes.",
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := topicArg(args)
			if err != nil {
				return err
			}
			cfg, set, err := ret.config()
			if err != nil {
				return err
			}
			cset, err := cmp.apply(&cfg)
			if err != nil {
				return err
			}
			set = set || cset
			grow := cmd.Flags().Changed("partitions")
			switch {
			case !set && !grow:
				return fmt.Errorf("nothing to change: give --partitions, --retention-time, --retention-bytes, --retention-records, --segment-bytes, --segment-age or a compaction flag (--cleanup-policy ...)")
			case grow && partitions < 1:
				return fmt.Errorf("--partitions is the new total count (more than the topic has), not %d", partitions)
			case grow && !yes:
				return fmt.Errorf("%s Run again with --yes to add the partitions", keysMove)
			}
			return srv.run(func(c *client.Client) error {
				if set {
					ti, err := c.Admin().AlterTopic(callContext(cmd), name, cfg)
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "altered topic %s: %s\n", ti.Name, policy(ti.Config))
				}
				if grow {
					ctx, cancel := srv.setupContext(cmd)
					defer cancel()
					ti, err := c.Admin().AddPartitions(ctx, name, partitions)
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "topic %s now has %d partitions; keyed records may go to other partitions than before\n", ti.Name, ti.Partitions)
				}
				return nil
			})
		},
	}
	ret.register(cmd)
	cmp.register(cmd)
	cmd.Flags().Int32Var(&partitions, "partitions", 0, "grow the topic to this many partitions (only more than it has)")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm --partitions, knowing that keys may move to other partitions")
	return cmd
}

func newTopicDeleteCmd(srv *serverFlag) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a topic and all its records",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := topicArg(args)
			if err != nil {
				return err
			}
			return srv.run(func(c *client.Client) error {
				if err := c.Admin().DeleteTopic(callContext(cmd), name); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted topic %s\n", name)
				return nil
			})
		},
	}
}
