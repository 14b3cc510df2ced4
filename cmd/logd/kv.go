package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/recordtext"
)

// newKVCmd is the key-value view of a compacted topic (docs/kv.md):
// client.KV.
func newKVCmd() *cobra.Command {
	var srv serverFlag
	cmd := &cobra.Command{
		Use:   "kv",
		Short: "Read and write a compacted topic by key: get, put, del, list, watch",
		Long: `A compacted topic (cleanup.policy compact or compact,delete) read as a
table: the newest value of each key. A get is linearizable (it sees every put
acknowledged before it began, through any node) unless --stale. A record's
offset is its revision: put and del with --if-offset N (or put --if-absent)
are a compare-and-set, refused when the key's newest record is another.`,
	}
	srv.register(cmd, true)
	cmd.AddCommand(newKVGetCmd(&srv), newKVPutCmd(&srv), newKVDelCmd(&srv), newKVListCmd(&srv), newKVWatchCmd(&srv))
	return cmd
}

// kvEntryJSON is one entry as kv get/list/watch --json print it.
type kvEntryJSON struct {
	Key           string  `json:"key"`
	KeyEncoding   string  `json:"key_encoding,omitempty"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
	Partition     int32   `json:"partition"`
	Offset        int64   `json:"offset"`
	Timestamp     string  `json:"timestamp"`
}

func printKVEntry(w io.Writer, e client.KVEntry, asJSON, withKey bool) error {
	if !asJSON {
		v := string(e.Value)
		if e.Deleted {
			v = "(deleted)"
		}
		if withKey {
			_, err := fmt.Fprintf(w, "%s\t%s\t@%d\n", e.Key, v, e.Offset)
			return err
		}
		_, err := fmt.Fprintln(w, v)
		return err
	}
	j := kvEntryJSON{Partition: e.Partition, Offset: e.Offset, Timestamp: e.Timestamp.UTC().Format(time.RFC3339Nano)}
	j.Key, j.KeyEncoding = recordtext.TextOrBase64(e.Key)
	if !e.Deleted {
		v, enc := recordtext.TextOrBase64(e.Value)
		j.Value, j.ValueEncoding = &v, enc
	}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// errKeyNotFound is kv get's answer for a key without a value (exit 1).
var errKeyNotFound = errors.New("key not found")

func newKVGetCmd(srv *serverFlag) *cobra.Command {
	var stale, asJSON bool
	cmd := &cobra.Command{
		Use:   "get TOPIC KEY",
		Short: "Print a key's newest value (exit 1 when it has none)",
		Long: `Print the newest value of KEY in the compacted TOPIC; --json prints key,
value, partition, offset (its revision, for put --if-offset) and timestamp.
A key with no value fails with "key not found". Needs read on the topic.`,
		Args: exactArgs("TOPIC", "KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := topicArg(args)
			if err != nil {
				return err
			}
			return srv.run(func(c *client.Client) error {
				var opts []client.KVOption
				if stale {
					opts = append(opts, client.Stale())
				}
				e, ok, err := c.KV(topic).Get(callContext(cmd), []byte(args[1]), opts...)
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("%w: topic %q has no value for key %q", errKeyNotFound, topic, args[1])
				}
				return printKVEntry(cmd.OutOrStdout(), e, asJSON, false)
			})
		},
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "read the node's local replica without proving it current (faster, may miss a put acknowledged moments ago)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the entry as a JSON object")
	return cmd
}

// casFlags are --if-offset and --if-absent.
type casFlags struct {
	ifOffset string
	ifAbsent bool
}

func (f *casFlags) register(cmd *cobra.Command, absent bool) {
	cmd.Flags().StringVar(&f.ifOffset, "if-offset", "", "only if the key's newest record is at this offset (compare-and-set)")
	if absent {
		cmd.Flags().BoolVar(&f.ifAbsent, "if-absent", false, "only if the key has no value")
	}
}

func (f *casFlags) options() ([]client.KVOption, error) {
	switch {
	case f.ifAbsent && f.ifOffset != "":
		return nil, errors.New("--if-offset and --if-absent: give one")
	case f.ifAbsent:
		return []client.KVOption{client.IfAbsent()}, nil
	case f.ifOffset != "":
		n, err := strconv.ParseInt(f.ifOffset, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--if-offset %q: want the offset of the key's newest record (logd kv get --json)", f.ifOffset)
		}
		return []client.KVOption{client.IfOffset(n)}, nil
	}
	return nil, nil
}

func newKVPutCmd(srv *serverFlag) *cobra.Command {
	var cas casFlags
	cmd := &cobra.Command{
		Use:   "put TOPIC KEY VALUE|-",
		Short: "Set a key's value (a produce); - reads the value from stdin",
		Long: `Produce one record KEY=VALUE to the compacted TOPIC (acks all) and print
its offset. With --if-offset N it is stored only if the key's newest record is
at offset N, with --if-absent only if the key has no value; otherwise it fails
with "the key's latest offset is X, not N". Needs write on the topic (and read
for a conditional put).`,
		Args: exactArgs("TOPIC", "KEY", "VALUE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := topicArg(args)
			if err != nil {
				return err
			}
			opts, err := cas.options()
			if err != nil {
				return err
			}
			value := []byte(args[2])
			if args[2] == "-" {
				if value, err = io.ReadAll(cmd.InOrStdin()); err != nil {
					return err
				}
			}
			return srv.run(func(c *client.Client) error {
				e, err := c.KV(topic).Put(callContext(cmd), []byte(args[1]), value, opts...)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "partition %d offset %d\n", e.Partition, e.Offset)
				return err
			})
		},
	}
	cas.register(cmd, true)
	return cmd
}

func newKVDelCmd(srv *serverFlag) *cobra.Command {
	var cas casFlags
	cmd := &cobra.Command{
		Use:   "del TOPIC KEY",
		Short: "Delete a key (a tombstone)",
		Long: `Produce a tombstone (a null value) of KEY to the compacted TOPIC: the key
has no value from then on, and compaction removes it after the topic's
delete.retention.ms. --if-offset N makes it conditional. Needs write on the
topic.`,
		Args: exactArgs("TOPIC", "KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := topicArg(args)
			if err != nil {
				return err
			}
			opts, err := cas.options()
			if err != nil {
				return err
			}
			return srv.run(func(c *client.Client) error {
				off, err := c.KV(topic).Delete(callContext(cmd), []byte(args[1]), opts...)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted at offset %d\n", off)
				return err
			})
		},
	}
	cas.register(cmd, false)
	return cmd
}

func newKVListCmd(srv *serverFlag) *cobra.Command {
	var (
		prefix        string
		stale, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list TOPIC [--prefix P]",
		Short: "List keys with their newest values, in key order",
		Long: `Print every key of the compacted TOPIC (--prefix: those that start with P)
with its newest value and offset, one a line, in key order; --json prints one
object a line. Needs read on the topic.`,
		Args: exactArgs("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := topicArg(args)
			if err != nil {
				return err
			}
			opts := []client.KVOption{client.WithPrefix([]byte(prefix))}
			if stale {
				opts = append(opts, client.Stale())
			}
			return srv.run(func(c *client.Client) error {
				return kvList(callContext(cmd), cmd.OutOrStdout(), c.KV(topic), opts, asJSON)
			})
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "only keys that start with this")
	cmd.Flags().BoolVar(&stale, "stale", false, "read local replicas without proving them current")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line")
	return cmd
}

// kvList prints the keys a page at a time.
func kvList(ctx context.Context, w io.Writer, kv *client.KV, opts []client.KVOption, asJSON bool) error {
	var after []byte
	for {
		page, more, last, err := kv.ListPage(ctx, after, opts...)
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := printKVEntry(w, e, asJSON, true); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		after = last
	}
}

func newKVWatchCmd(srv *serverFlag) *cobra.Command {
	var (
		prefix string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "watch TOPIC [--prefix P]",
		Short: "Print each put and delete of the keys as it happens",
		Long: `Follow the compacted TOPIC from now on and print each put and delete of its
keys (--prefix: those that start with P), one a line, until interrupted;
--json prints one object a line (a delete has a null value). Needs read on the
topic.`,
		Args: exactArgs("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := topicArg(args)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			return srv.run(func(c *client.Client) error {
				return c.KV(topic).Watch(cmd.Context(), func(e client.KVEntry) error {
					return printKVEntry(w, e, asJSON, true)
				}, client.WithPrefix([]byte(prefix)))
			})
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "only keys that start with this")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line")
	return cmd
}
