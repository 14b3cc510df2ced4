package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// KV is the key-value view of a compacted topic (docs/kv.md): the newest
// value of each key, read and written by key. Any node serves it. A Get
// is linearizable (it reflects every put acknowledged before it began)
// unless asked with Stale. A Put with IfOffset or IfAbsent is a
// compare-and-set, refused with a *KeyConflictError when the key moved on.
type KV struct {
	c     *Client
	topic string
}

// KV is the key-value view of topic, which must be compacted
// (cleanup.policy compact or compact,delete).
func (c *Client) KV(topic string) *KV { return &KV{c: c, topic: topic} }

// KVEntry is a key's record: its newest on Get and List, each put or
// delete on Watch.
type KVEntry struct {
	Key, Value []byte
	Headers    []Header
	Partition  int32
	Offset     int64 // the revision a conditional put names
	Timestamp  time.Time
	Deleted    bool // Watch: the key was deleted
}

// KVOption tunes a KV call.
type KVOption func(*kvOptions)

type kvOptions struct {
	stale    bool
	expected *int64
	prefix   []byte
	limit    int
	headers  []Header
}

// Stale reads the node's local replica without proving it current: faster,
// but it may miss a put acknowledged moments ago (Get, List).
func Stale() KVOption { return func(o *kvOptions) { o.stale = true } }

// IfOffset makes a Put or Delete conditional: it is refused with a
// *KeyConflictError unless the key's newest record is at offset.
func IfOffset(offset int64) KVOption { return func(o *kvOptions) { o.expected = &offset } }

// IfAbsent makes a Put conditional on the key having no value.
func IfAbsent() KVOption { return IfOffset(-1) }

// WithPrefix restricts a List or Watch to the keys that start with p.
func WithPrefix(p []byte) KVOption { return func(o *kvOptions) { o.prefix = p } }

// WithPageSize sets how many keys one List call asks for at a time
// (default 100, at most 1000).
func WithPageSize(n int) KVOption { return func(o *kvOptions) { o.limit = n } }

// WithHeaders sets the headers of a Put's record.
func WithHeaders(hs ...Header) KVOption { return func(o *kvOptions) { o.headers = hs } }

func kvOpts(opts []KVOption) kvOptions {
	var o kvOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// ErrKeyConflict matches a *KeyConflictError.
var ErrKeyConflict = errors.New("client: key conflict")

// KeyConflictError refuses a conditional Put or Delete: the key's newest
// record is at Latest (-1: the key has no value).
type KeyConflictError struct {
	Latest int64
	Err    error
}

func (e *KeyConflictError) Error() string        { return e.Err.Error() }
func (e *KeyConflictError) Unwrap() error        { return e.Err }
func (e *KeyConflictError) Is(target error) bool { return target == ErrKeyConflict }

var latestOffset = regexp.MustCompile(`the key's latest offset is (-?\d+|none)`)

// kvError reads a conditional put's refusal back as a *KeyConflictError.
func kvError(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.FailedPrecondition {
		return err
	}
	m := latestOffset.FindStringSubmatch(st.Message())
	if m == nil {
		return err
	}
	latest := int64(-1)
	if m[1] != "none" {
		latest, _ = strconv.ParseInt(m[1], 10, 64)
	}
	return &KeyConflictError{Latest: latest, Err: err}
}

// Get returns key's newest value; ok is false when the key has none.
func (kv *KV) Get(ctx context.Context, key []byte, opts ...KVOption) (e KVEntry, ok bool, err error) {
	o := kvOpts(opts)
	err = kv.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) error {
		resp, err := logdv1.NewKVClient(cc).Get(ctx, &logdv1.KVGetRequest{Topic: kv.topic, Key: key, Stale: o.stale})
		if err != nil {
			return err
		}
		ok = resp.Found
		if ok {
			e = kvEntry(resp.Entry)
		}
		return nil
	})
	return e, ok, err
}

// kvWriters lends each Put and Delete a writer of its own for the whole
// call, retries included: a producer id and the next epoch of it (sequence
// 0), so the partition's idempotence state answers a retry of a put that
// was stored but not answered with the first attempt's offset rather than
// storing it again. A writer is used by one call at a time, so its epochs
// reach every partition in order; past the largest epoch it takes a new id.
type kvWriters struct {
	mu   sync.Mutex
	idle []kvWriter
}

type kvWriter struct {
	id    int64
	epoch int32
}

// maxIdleKVWriters bounds the writers kept between calls (one per
// concurrent put is what a client needs).
const maxIdleKVWriters = 64

func (ws *kvWriters) take() kvWriter {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := kvWriter{id: newProducerID(), epoch: -1}
	if n := len(ws.idle); n > 0 {
		w, ws.idle = ws.idle[n-1], ws.idle[:n-1]
	}
	w.epoch++
	if w.epoch > math.MaxInt16 {
		w = kvWriter{id: newProducerID()}
	}
	return w
}

func (ws *kvWriters) give(w kvWriter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.idle) < maxIdleKVWriters {
		ws.idle = append(ws.idle, w)
	}
}

// write runs one put or delete with a writer of its own, retried as any
// call: the writer goes with every attempt.
func (kv *KV) write(ctx context.Context, call func(ctx context.Context, c logdv1.KVClient, w *logdv1.KVWriter) (*logdv1.KVPutResponse, error)) (*logdv1.KVPutResponse, error) {
	w := kv.c.kvw.take()
	defer kv.c.kvw.give(w)
	pw := &logdv1.KVWriter{Id: w.id, Epoch: w.epoch}
	var resp *logdv1.KVPutResponse
	err := kv.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = call(ctx, logdv1.NewKVClient(cc), pw)
		return err
	})
	return resp, err
}

// Put stores value as key's newest and returns where it was stored
// (Offset, Partition, Timestamp). A Put that fails for the node's
// unavailability is retried, and stored once: a retry of a put that was
// stored but not answered is answered with its offset. A conditional one
// that was stored but not answered may be refused on its retry with its
// own offset as Latest.
func (kv *KV) Put(ctx context.Context, key, value []byte, opts ...KVOption) (KVEntry, error) {
	o := kvOpts(opts)
	req := &logdv1.KVPutRequest{Topic: kv.topic, Key: key, Value: value, ExpectedOffset: o.expected}
	for _, h := range o.headers {
		req.Headers = append(req.Headers, &logdv1.Header{Key: h.Key, Value: h.Value})
	}
	resp, err := kv.write(ctx, func(ctx context.Context, c logdv1.KVClient, w *logdv1.KVWriter) (*logdv1.KVPutResponse, error) {
		req.Writer = w
		return c.Put(ctx, req)
	})
	if err != nil {
		return KVEntry{}, kvError(err)
	}
	return KVEntry{Key: key, Value: value, Headers: o.headers, Partition: resp.Partition, Offset: resp.Offset,
		Timestamp: time.UnixMilli(resp.TimestampMs)}, nil
}

// Delete removes key (a tombstone) and returns the tombstone's offset;
// IfOffset makes it conditional. It is retried and stored once as Put is.
func (kv *KV) Delete(ctx context.Context, key []byte, opts ...KVOption) (int64, error) {
	o := kvOpts(opts)
	resp, err := kv.write(ctx, func(ctx context.Context, c logdv1.KVClient, w *logdv1.KVWriter) (*logdv1.KVPutResponse, error) {
		return c.Delete(ctx, &logdv1.KVDeleteRequest{Topic: kv.topic, Key: key, ExpectedOffset: o.expected, Writer: w})
	})
	if err != nil {
		return 0, kvError(err)
	}
	return resp.Offset, nil
}

// List returns every key (WithPrefix: those with the prefix) with its
// newest value, in key order, asking a page at a time.
func (kv *KV) List(ctx context.Context, opts ...KVOption) ([]KVEntry, error) {
	var out []KVEntry
	var after []byte
	for {
		page, more, last, err := kv.ListPage(ctx, after, opts...)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if !more {
			return out, nil
		}
		after = last
	}
}

// ListPage returns one page of keys after after (nil: from the first);
// more says keys may be left past last, the next page's after.
func (kv *KV) ListPage(ctx context.Context, after []byte, opts ...KVOption) (page []KVEntry, more bool, last []byte, err error) {
	o := kvOpts(opts)
	err = kv.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) error {
		resp, err := logdv1.NewKVClient(cc).List(ctx, &logdv1.KVListRequest{Topic: kv.topic, Prefix: o.prefix, After: after,
			Limit: int32(o.limit), Stale: o.stale})
		if err != nil {
			return err
		}
		page = make([]KVEntry, len(resp.Entries))
		for i, e := range resp.Entries {
			page[i] = kvEntry(e)
		}
		more, last = resp.More, resp.Last
		return nil
	})
	return page, more, last, err
}

// Watch calls fn with every put and delete (Deleted) made after it began
// of the keys WithPrefix selects, until ctx ends (nil), fn fails (its
// error) or the stream fails.
func (kv *KV) Watch(ctx context.Context, fn func(KVEntry) error, opts ...KVOption) error {
	o := kvOpts(opts)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx) // ends the stream however Watch returns
	defer cancel()
	var st logdv1.KV_WatchClient
	_, err := kv.c.call(ctx, "", func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		st, err = logdv1.NewKVClient(cc).Watch(ctx, &logdv1.KVWatchRequest{Topic: kv.topic, Prefix: o.prefix})
		return err
	})
	for err == nil {
		var e *logdv1.KVEntry
		if e, err = st.Recv(); err == nil {
			err = fn(kvEntry(e))
		}
	}
	if parent.Err() != nil || errors.Is(err, io.EOF) {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return wrapStatus(err)
	}
	return err
}

func kvEntry(e *logdv1.KVEntry) KVEntry {
	out := KVEntry{Key: e.Key, Value: e.Value, Partition: e.Partition, Offset: e.Offset,
		Timestamp: time.UnixMilli(e.TimestampMs), Deleted: e.Deleted}
	for _, h := range e.Headers {
		out.Headers = append(out.Headers, Header{Key: h.Key, Value: h.Value})
	}
	return out
}

// String is the entry as key=value@offset, for logs.
func (e KVEntry) String() string {
	return fmt.Sprintf("%s=%s@%d", e.Key, e.Value, e.Offset)
}
