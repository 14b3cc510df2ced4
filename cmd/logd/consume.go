package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/client"
)

// consumeFlags are the flags of logd consume.
type consumeFlags struct {
	part   int32
	from   string
	group  string
	commit bool
	count  int
	tail   int64 // --tail: the last N records of each partition
	until  string
	// untilOffsets is --until resolved: each partition's first offset not
	// to print (none: no bound).
	untilOffsets map[int32]int64
	follow       bool
	format       string
	json         bool
	maxWait      time.Duration
	// Group membership (--group with --follow).
	assignor   string
	session    time.Duration
	autoCommit time.Duration // --auto-commit-interval
	isolation  string        // --isolation
	// Share-group membership (--share, consume_share.go).
	share          string
	releaseOnError bool
}

const consumeLong = `Print records of TOPIC, from every partition (or --partition), each value on
its own line; stop at the end of the log as it was at start unless --follow.
With --group and --follow (no --partition) the process joins the group as a
member: the group's members share the partitions of every TOPIC named (all
members should name the same topics), each record printed by one of them.

Where to start (--from): earliest, latest, an offset (42), a time in RFC 3339
(2024-05-01T12:00:00Z) or a duration ago (-1h, -7d): the first record at or
after that time. Default: earliest, or with --group the group's committed
offset (earliest for partitions without one); --from overrides the committed
offset. --tail N starts each partition at its last N records instead (kcat's
-o -N). --until (an offset, a time or a duration ago; not with --follow)
stops each partition before that position: --from T1 --until T2 prints the
records from time T1 up to, not including, time T2. --follow tails new records: without --from it starts at the end (with
--group, at the committed offsets, and at the end where there is none); with
--from it replays from there, then follows. A committed offset that retention
already removed is reported on stderr and consumption resumes at the log
start. A stored batch that does not decode is reported on stderr with its
offsets and skipped. With --group and --commit, the
offset after each printed record is committed as it is printed, so a consumer
that stops, or --count N, resumes exactly after the last record printed.
Without --commit a group member (--group --follow) commits what it printed
every --auto-commit-interval (default 5s, as Kafka's consumers), at each
rebalance and when it stops, so group describe shows its lag while it runs.

--json prints one object a line: topic, partition, offset, key, value and
timestamp (RFC 3339, ms); key and value are strings, or base64 with
"key_encoding"/"value_encoding": "base64" when they are not UTF-8.

--format prints each record through a template:
  %t topic  %p partition  %o offset  %k key  %s value  %T timestamp (ms since
  the epoch)  %D timestamp (RFC 3339)  %h headers (k=v,...)  %% a percent sign
  \n newline  \t tab  \\ backslash
A newline is added after each record unless FMT ends with \n.

--isolation read_committed (the default) prints committed records only: each
partition is read up to its last stable offset (before its oldest open
transaction), without the records of aborted transactions;
--isolation read_uncommitted prints every record up to the high watermark.

An offset past a partition's end (--from 100 of a partition of 3 records)
has nothing to read without --follow: a line on stderr says so for each such
partition and consume exits 0, as kcat -e does at the end of a partition.`

func newConsumeCmd() *cobra.Command {
	var (
		srv serverFlag
		fl  consumeFlags
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC [TOPIC...]",
		Short: "Print records of a topic",
		Long:  consumeLong,
		Args:  minArgs("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			topics, err := topicArgs(args)
			if err != nil {
				return err
			}
			opts, pr, err := fl.options(topics[0], cmd.Flags().Changed("partition"))
			if err != nil {
				return err
			}
			if fl.share != "" {
				return srv.run(func(c *client.Client) error {
					return shareConsume(callContext(cmd), c, topics, fl, pr, cmd.OutOrStdout())
				})
			}
			join := fl.group != "" && fl.follow && !cmd.Flags().Changed("partition")
			if err := fl.check(topics, join, cmd.Flags().Changed("tail")); err != nil {
				return err
			}
			return srv.run(func(c *client.Client) error {
				if fl.until != "" {
					if fl.untilOffsets, err = resolveUntil(callContext(cmd), c.Admin(), opts, fl.until); err != nil {
						return err
					}
				}
				if !fl.follow && !join {
					if err := notePastEnd(callContext(cmd), c.Admin(), opts, cmd.ErrOrStderr()); err != nil {
						return err
					}
				}
				r, err := fl.open(callContext(cmd), c, opts, topics, join)
				if err != nil {
					return err
				}
				if fl.tail > 0 {
					if err := seekTail(callContext(cmd), c.Admin(), r, opts, fl.tail); err != nil {
						return errors.Join(err, r.Close())
					}
				}
				err = consume(callContext(cmd), r, opts, fl, srv.timeout, c.Addr(), pr, cmd.OutOrStdout(), cmd.ErrOrStderr())
				return errors.Join(err, r.Close())
			})
		},
	}
	srv.register(cmd, false)
	f := cmd.Flags()
	f.Int32Var(&fl.part, "partition", 0, "read only this partition (default: all)")
	f.StringVar(&fl.from, "from", "", "where to start: earliest, latest, OFFSET, RFC3339 time or -DURATION (default: earliest, or the group's committed offset)")
	f.StringVar(&fl.group, "group", "", "consumer group: start from its committed offsets")
	f.BoolVar(&fl.commit, "commit", false, "commit the group's offset after the records printed (needs --group)")
	f.IntVar(&fl.count, "count", 0, "stop after N records (default: no limit)")
	f.StringVar(&fl.until, "until", "", "stop each partition before this position: OFFSET, RFC3339 time or -DURATION (records before it are printed)")
	f.Int64Var(&fl.tail, "tail", 0, "start each partition at its last N records (kcat -o -N); with --follow, then follow")
	f.BoolVar(&fl.follow, "follow", false, "keep waiting for new records instead of stopping at the end of the log")
	f.StringVar(&fl.format, "format", "", "print each record through FMT (see above)")
	f.BoolVar(&fl.json, "json", false, "print one JSON object a line")
	f.StringVar(&fl.isolation, "isolation", "read_committed", "what is read of transactions: read_committed (committed records only) or read_uncommitted (every record, those of open and aborted transactions too)")
	f.DurationVar(&fl.maxWait, "max-wait", time.Second, "how long one fetch waits for new records")
	f.MarkHidden("max-wait")
	f.StringVar(&fl.assignor, "assignor", "cooperative-sticky", "with --group --follow: how the group shares partitions: cooperative-sticky, range or round-robin")
	f.DurationVar(&fl.session, "session-timeout", client.DefaultSessionTimeout, "with --group --follow: how long the group waits for a member that stopped answering before giving its partitions to the others")
	addShareFlags(cmd, &fl)
	f.DurationVar(&fl.autoCommit, "auto-commit-interval", 5*time.Second, "with --group --follow: commit what was printed this often (Kafka's auto commit); 0: only at a rebalance and at exit (--commit: after every record)")
	return cmd
}

// check refuses flags that exclude each other; join: the read is a group
// member's.
func (fl *consumeFlags) check(topics []string, join, tailGiven bool) error {
	if fl.tail < 0 || (tailGiven && fl.tail == 0) {
		return fmt.Errorf("--tail %d: give a positive number of records", fl.tail)
	}
	if fl.until != "" && (fl.follow || join) {
		return errors.New("--until ends a read of the records stored: it excludes --follow")
	}
	if fl.tail > 0 && (fl.from != "" || fl.group != "") {
		return errors.New("--tail starts each partition at its last N records: it excludes --from and --group")
	}
	if len(topics) > 1 && !join {
		return errors.New("several topics are read as a group member: give --group and --follow (and no --partition), or one topic")
	}
	return nil
}

// minArgs requires at least one argument, named name in the usage.
func minArgs(name string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("missing %s: usage: %s", name, cmd.UseLine())
		}
		return nil
	}
}

// topicArgs checks every topic name, and that none is given twice.
func topicArgs(args []string) ([]string, error) {
	var topics []string
	for _, a := range args {
		t, err := topicArg([]string{a})
		if err != nil {
			return nil, err
		}
		if slices.Contains(topics, t) {
			return nil, fmt.Errorf("topic %q is named twice", t)
		}
		topics = append(topics, t)
	}
	return topics, nil
}

// options checks the flags and turns them into the consumer's options and
// the record printer. partitionSet: --partition was given.
func (fl *consumeFlags) options(topic string, partitionSet bool) (client.ConsumerOptions, printer, error) {
	opts := client.ConsumerOptions{Topic: topic, Group: fl.group, Follow: fl.follow, MaxWait: fl.maxWait}
	if partitionSet {
		if fl.part < 0 {
			return opts, nil, fmt.Errorf("--partition %d: partitions are numbered from 0", fl.part)
		}
		opts.Partitions = []int32{fl.part}
	}
	var err error
	if opts.Isolation, err = parseIsolation(fl.isolation); err != nil {
		return opts, nil, err
	}
	if fl.from != "" {
		if opts.Start, err = parsePosition(fl.from, time.Now()); err != nil {
			return opts, nil, fmt.Errorf("--from: %w", err)
		}
		opts.IgnoreCommitted = true
	} else if fl.follow {
		// Tailing: what arrives from now on, as tail -f does.
		opts.Start = client.Latest()
	}
	if fl.commit && fl.group == "" {
		return opts, nil, errors.New("--commit needs --group: the committed offsets belong to a consumer group")
	}
	if fl.count < 0 {
		return opts, nil, fmt.Errorf("--count %d: give a positive number of records", fl.count)
	}
	if fl.json && fl.format != "" {
		return opts, nil, errors.New("--json and --format exclude each other: give one")
	}
	pr := valuePrinter
	switch {
	case fl.json:
		pr = jsonPrinter
	case fl.format != "":
		if pr, err = formatPrinter(fl.format); err != nil {
			return opts, nil, fmt.Errorf("--format: %w", err)
		}
	}
	return opts, pr, nil
}

// resolveUntil turns --until into each partition's first offset not to
// print: the offset itself, or the first record at or after the time.
func resolveUntil(ctx context.Context, admin *client.Admin, opts client.ConsumerOptions, until string) (map[int32]int64, error) {
	pos, err := parsePosition(until, time.Now())
	if err != nil {
		return nil, fmt.Errorf("--until: %w", err)
	}
	ends, err := admin.ListOffsets(ctx, opts.Topic, opts.Partitions, pos)
	if err != nil {
		return nil, err
	}
	bounds := make(map[int32]int64, len(ends))
	for _, e := range ends {
		if e.Offset < 0 || e.Offset > e.HighWatermark { // no record at or after the time
			e.Offset = e.HighWatermark
		}
		bounds[e.Partition] = e.Offset
	}
	return bounds, nil
}

// seekTail moves each partition of opts to its last n records (or its log
// start, when it holds fewer).
func seekTail(ctx context.Context, admin *client.Admin, r recordReader, opts client.ConsumerOptions, n int64) error {
	ends, err := admin.ListOffsets(ctx, opts.Topic, opts.Partitions, client.Latest())
	if err != nil {
		return err
	}
	for _, e := range ends {
		if err := r.SeekTopicPartition(ctx, opts.Topic, e.Partition, client.AtOffset(max(e.LogStartOffset, e.HighWatermark-n))); err != nil {
			return err
		}
	}
	return nil
}

// notePastEnd says on stderr which partitions opts.Start, an offset, is
// past the end of: reading them without --follow prints nothing.
func notePastEnd(ctx context.Context, admin *client.Admin, opts client.ConsumerOptions, stderr io.Writer) error {
	off, ok := opts.Start.Offset()
	if !ok {
		return nil
	}
	ends, err := admin.ListOffsets(ctx, opts.Topic, opts.Partitions, client.Latest())
	if err != nil {
		return err
	}
	for _, e := range ends {
		if off > e.HighWatermark {
			fmt.Fprintf(stderr, "logd: offset %d of %s/%d is past the end of the partition (%d): nothing to read there\n",
				off, opts.Topic, e.Partition, e.HighWatermark)
		}
	}
	return nil
}

// transientBackoff is how often consume retries a server that cannot
// answer: without --follow for --timeout, with it for good.
var transientBackoff = 500 * time.Millisecond

// skipLost moves a partition past records that cannot be read, reporting
// it on stderr: a group's committed offset that retention removed (resumed
// at the log start), and a stored batch that does not decode (its records
// are lost to readers; the ones after it are not). It reports whether err
// was one of those.
func skipLost(ctx context.Context, cons recordReader, err error, resumed bool, group string, stderr io.Writer) (bool, error) {
	var oor *client.OutOfRangeError
	var bad *client.CorruptBatchError
	switch {
	case errors.As(err, &oor) && resumed && oor.LogStartOffset > oor.Offset:
		fmt.Fprintf(stderr, "logd: group %s's offset %d of %s/%d was removed by retention: %d records lost; resuming at the log start, %d\n",
			group, oor.Offset, oor.Topic, oor.Partition, oor.LogStartOffset-oor.Offset, oor.LogStartOffset)
		return true, cons.SeekTopicPartition(ctx, oor.Topic, oor.Partition, client.AtOffset(oor.LogStartOffset))
	case errors.As(err, &bad):
		fmt.Fprintf(stderr, "logd: %s/%d: the stored batch at offsets %d to %d does not decode (%v): %d records skipped; resuming at %d\n",
			bad.Topic, bad.Partition, bad.FirstOffset, bad.LastOffset, bad.Err, bad.LastOffset-bad.FirstOffset+1, bad.LastOffset+1)
		return true, cons.SeekTopicPartition(ctx, bad.Topic, bad.Partition, client.AtOffset(bad.LastOffset+1))
	}
	return false, nil
}

// transient reports errors worth retrying: the server or its leader is
// (briefly) unavailable.
func transient(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return false
	}
	switch se.GRPCStatus().Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted:
		return true
	}
	return false
}

// retryNote is the line consume prints when it starts retrying. The
// consumer was reading, so a node that does not answer is restarting or
// gone, not "not running": explain's hint would mislead.
func retryNote(err error, server string) string {
	if errors.Is(err, client.ErrUnreachable) {
		return fmt.Sprintf("logd: lost the connection to a logd node of %s (%s); retrying", server, status.Convert(err).Message())
	}
	return fmt.Sprintf("logd: %v; retrying", explain(err, server))
}

// printAll prints recs and returns, by topic and partition, the offset
// after the last one printed.
func printAll(out *bufio.Writer, pr printer, recs []client.ConsumedRecord) (map[string]map[int32]int64, error) {
	next := make(map[string]map[int32]int64)
	for _, r := range recs {
		if err := pr(out, r); err != nil {
			return nil, err
		}
		if next[r.Topic] == nil {
			next[r.Topic] = make(map[int32]int64)
		}
		next[r.Topic][r.Partition] = r.Offset + 1
	}
	return next, nil
}

// consume prints records until the end of the log (or --count, or forever
// with --follow), committing what it printed when asked.
func consume(ctx context.Context, cons recordReader, opts client.ConsumerOptions, fl consumeFlags, patience time.Duration,
	server string, pr printer, stdout, stderr io.Writer) error {
	out := bufio.NewWriterSize(stdout, 64<<10)
	defer out.Flush()
	printed := 0
	// Only a position resumed from the group may silently jump to the log
	// start; one the user asked for with --from fails clearly.
	resumed := opts.Group != "" && !opts.IgnoreCommitted
	if _, ok := cons.(*client.GroupConsumer); ok {
		resumed = true // a member starts every partition it gets at the group's offset
	}
	var failingSince time.Time // first of consecutive transient failures
	auto := newAutoCommit(cons, fl, stderr)
	for fl.count == 0 || printed < fl.count {
		recs, err := cons.Poll(ctx)
		if err == io.EOF {
			break
		}
		if skipped, err := skipLost(ctx, cons, err, resumed, opts.Group, stderr); skipped || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		if err != nil {
			if ctx.Err() != nil { // interrupted: a normal way to stop --follow
				return nil
			}
			if !transient(err) {
				return err
			}
			// The server restarts, or a leader changes: wait and retry, for
			// good with --follow, else for a while.
			if failingSince.IsZero() {
				failingSince = time.Now()
				fmt.Fprintln(stderr, retryNote(err, server))
			}
			if !fl.follow && time.Since(failingSince) > patience {
				return err
			}
			select {
			case <-time.After(transientBackoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		if !failingSince.IsZero() {
			fmt.Fprintln(stderr, "logd: reading again")
			failingSince = time.Time{}
		}
		if fl.untilOffsets != nil {
			recs = slices.DeleteFunc(recs, func(r client.ConsumedRecord) bool { return r.Offset >= fl.untilOffsets[r.Partition] })
		}
		if fl.count > 0 && len(recs) > fl.count-printed {
			// The records not printed are read again (a group member
			// commits its positions when it stops).
			if err := unread(ctx, cons, recs[fl.count-printed:]); err != nil {
				return err
			}
			recs = recs[:fl.count-printed]
		}
		next, err := printAll(out, pr, recs)
		if err != nil {
			return err
		}
		printed += len(recs)
		if err := out.Flush(); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
		if fl.commit && len(next) > 0 {
			// Commit even when interrupted: these records were printed.
			if err := cons.CommitTopicOffsets(context.WithoutCancel(ctx), next); err != nil && !fencedMember(cons, err, stderr) {
				return err
			}
		}
		auto.due(ctx)
	}
	return nil
}

// parseIsolation reads --isolation.
func parseIsolation(v string) (client.Isolation, error) {
	switch v {
	case "read_committed":
		return client.ReadCommitted, nil
	case "read_uncommitted":
		return client.ReadUncommitted, nil
	}
	return 0, fmt.Errorf("--isolation %q: want read_committed or read_uncommitted", v)
}
