package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

const produceLong = `Append one record per line of standard input to TOPIC, in batches, and wait
until every record is acknowledged. Exits non-zero if any record was not.

Records are routed by key (--key for all lines, or --key-delimiter to take each
line's key from before the first delimiter: with ':' the line "k:v" is key k,
value v), unkeyed records spread over partitions, and --partition overrides both.
The delimiter may be written with the escapes kcat reads: \t (tab), \r, \\
(a backslash) and \xNN (a byte in hex). An empty line is an empty record
(with --key-delimiter, an empty record without a key), as kcat and
kafka-console-producer send it. --header KEY=VALUE (repeatable) adds headers
to every record; --print-offsets prints TOPIC/PARTITION@OFFSET of each record
on standard output, in the order the records are acknowledged (in input
order within a partition).

--timeout, when given, is also how long each record may take to be
acknowledged, retries included (the producer's delivery timeout, 2m without
it): a burst over thousands of sleeping partitions may need longer.`

func newProduceCmd() *cobra.Command {
	var (
		srv          serverFlag
		key          string
		delimiter    string
		part         int32
		acks         string
		headers      []string
		printOffsets bool
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Append one record per line of standard input",
		Long:  produceLong,
		Args:  exactArgs("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := topicArg(args)
			if err != nil {
				return err
			}
			if key != "" && delimiter != "" {
				return errors.New("--key and --key-delimiter exclude each other: give one")
			}
			opts := client.ProducerOptions{}
			if cmd.Flags().Changed("timeout") {
				opts.DeliveryTimeout = srv.timeout
			}
			if opts.Acks, err = parseAcks(acks); err != nil {
				return err
			}
			delim, err := unescapeDelimiter(delimiter)
			if err != nil {
				return fmt.Errorf("--key-delimiter: %w", err)
			}
			hs, err := parseHeaders(headers)
			if err != nil {
				return err
			}
			lines := lineSource{r: bufio.NewReaderSize(cmd.InOrStdin(), 64<<10), key: []byte(key), delim: delim, headers: hs}
			var report func(client.Ack)
			if printOffsets {
				var mu sync.Mutex
				out := cmd.OutOrStdout()
				report = func(a client.Ack) {
					mu.Lock()
					defer mu.Unlock()
					fmt.Fprintf(out, "%s/%d@%d\n", a.Topic, a.Partition, a.Offset)
				}
			}
			if key == "" {
				lines.key = nil
			}
			return srv.run(func(c *client.Client) error {
				ctx := callContext(cmd)
				t, err := c.Admin().Topic(ctx, topic)
				if err != nil {
					return err
				}
				var partition *int32
				if cmd.Flags().Changed("partition") {
					if part < 0 || part >= t.Partitions {
						return fmt.Errorf("--partition %d: topic %s has partitions 0 to %d", part, topic, t.Partitions-1)
					}
					partition = client.ToPartition(part)
				}
				return produceLines(ctx, c, opts, topic, partition, &lines, report)
			})
		},
	}
	srv.register(cmd, false)
	f := cmd.Flags()
	f.StringVar(&key, "key", "", "key of every record")
	f.StringVar(&delimiter, "key-delimiter", "", "split each line at the first DELIM into key and value")
	f.Int32Var(&part, "partition", 0, "write every record to this partition")
	f.StringArrayVar(&headers, "header", nil, "add the header KEY=VALUE to every record (repeat it for several, as kcat -H)")
	f.BoolVar(&printOffsets, "print-offsets", false, "print TOPIC/PARTITION@OFFSET of each record as it is acknowledged")
	f.StringVar(&acks, "acks", "", "leader: durable on the leader; all: committed by the partition's replicas (default: leader on one node, all in a cluster)")
	return cmd
}

// parseHeaders reads --header KEY=VALUE flags.
func parseHeaders(flags []string) ([]client.Header, error) {
	var hs []client.Header
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--header %q: give KEY=VALUE", f)
		}
		hs = append(hs, client.Header{Key: k, Value: []byte(v)})
	}
	return hs, nil
}

// unescapeDelimiter reads --key-delimiter's escapes, as kcat reads -K's:
// \t, \r, \\ and \xNN. A newline cannot be one: it ends the line.
func unescapeDelimiter(s string) ([]byte, error) {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			out = append(out, s[i])
			continue
		}
		i++
		switch s[i] {
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'n':
			return nil, errors.New(`\n: lines end at a newline, so it cannot split one; use another delimiter`)
		case '\\':
			out = append(out, '\\')
		case 'x':
			b, err := strconv.ParseUint(s[i+1:min(i+3, len(s))], 16, 8)
			if err != nil || i+3 > len(s) {
				return nil, fmt.Errorf(`%q: \x takes two hex digits`, s)
			}
			out = append(out, byte(b))
			i += 2
		default:
			out = append(out, '\\', s[i]) // not an escape: kept as written
		}
	}
	if bytes.IndexByte(out, '\n') >= 0 {
		return nil, errors.New("a newline cannot split a line into key and value: use another delimiter")
	}
	return out, nil
}

// lineSource turns input lines into records.
type lineSource struct {
	r       *bufio.Reader
	key     []byte
	delim   []byte
	headers []client.Header // of every record
	n       int             // lines read
}

// next returns the next line's key and value; io.EOF at the end.
func (l *lineSource) next() (key, value []byte, err error) {
	line, err := l.r.ReadBytes('\n')
	if err == io.EOF && len(line) == 0 {
		return nil, nil, io.EOF
	}
	if err != nil && err != io.EOF {
		return nil, nil, fmt.Errorf("reading standard input: %w", err)
	}
	l.n++
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(l.delim) == 0 || len(line) == 0 {
		// An empty line is an empty record, without a key, as with kcat -K
		// and kafka-console-producer.
		return l.key, line, nil
	}
	k, v, ok := bytes.Cut(line, l.delim)
	if !ok {
		return nil, nil, fmt.Errorf("line %d has no key delimiter %q: with --key-delimiter every line is KEY%sVALUE", l.n, l.delim, l.delim)
	}
	return k, v, nil
}

// produceLines produces every line and waits for all acknowledgements.
// report, when set, is told of each record acknowledged.
func produceLines(ctx context.Context, c *client.Client, opts client.ProducerOptions, topic string, partition *int32, lines *lineSource, report func(client.Ack)) error {
	p := c.NewProducer(opts)
	var (
		mu       sync.Mutex
		failed   int
		firstErr error
	)
	onAck := func(a client.Ack, err error) {
		if err == nil && report != nil {
			report(a)
		}
		if err != nil {
			mu.Lock()
			failed++
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
	}
	sent := 0
	var inputErr error
	for ctx.Err() == nil {
		key, value, err := lines.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			inputErr = err
			break
		}
		// The reader reuses nothing: ReadBytes returns a fresh slice.
		p.ProduceFunc(ctx, client.Record{Topic: topic, Partition: partition, Key: key, Value: value, Headers: lines.headers}, onAck)
		sent++
	}
	// Send what is queued and wait for it; a (further) interrupt gives up,
	// and records then not acknowledged are reported as such.
	closeCtx := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		closeCtx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
	}
	p.CloseContext(closeCtx)
	mu.Lock()
	defer mu.Unlock()
	switch {
	case failed > 0:
		return fmt.Errorf("%d of %d records were not acknowledged; the first failure: %w", failed, sent, firstErr)
	case inputErr != nil:
		return fmt.Errorf("stopped after %d records (all acknowledged): %w", sent, inputErr)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted after %d records (all acknowledged)", sent)
	}
	return nil
}

// exactArgs requires one argument per name and says which are missing.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < len(names) {
			return fmt.Errorf("missing %s: usage: %s", names[len(args)], cmd.UseLine())
		}
		if len(args) > len(names) {
			return fmt.Errorf("unexpected argument %q: usage: %s", args[len(names)], cmd.UseLine())
		}
		return nil
	}
}
