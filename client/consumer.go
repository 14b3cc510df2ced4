package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// Defaults of ConsumerOptions.
const (
	DefaultMaxWait       = 500 * time.Millisecond
	DefaultFetchMaxBytes = 1 << 20
)

// ConsumerOptions configure a Consumer.
type ConsumerOptions struct {
	Topic string
	// Partitions to read; empty: every partition of the topic.
	Partitions []int32
	// Group, when set, is the consumer group whose committed offsets the
	// consumer starts from and Commit writes.
	Group string
	// Start is where partitions without a committed offset start
	// (default Earliest). It is also where every partition starts when
	// IgnoreCommitted is set.
	Start Position
	// IgnoreCommitted starts from Start even when the group has committed
	// offsets (Commit still writes them).
	IgnoreCommitted bool
	// Follow makes Poll wait for new records forever. Without it, Poll
	// returns io.EOF once every partition reached the high watermark it had
	// when the consumer was created.
	Follow bool
	// MaxWait is how long one Poll long-polls when nothing is available
	// (default 500ms). Poll returns no records, and no error, after it.
	MaxWait time.Duration
	// MaxBytes bounds one partition's fetch (default 1 MiB; at least one
	// batch is always returned).
	MaxBytes int32
	// Isolation is what the consumer sees of transactions: ReadCommitted
	// (the default) or ReadUncommitted.
	Isolation Isolation
}

// ConsumedRecord is a record read from the log.
type ConsumedRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp time.Time
}

// Consumer reads records of one topic from chosen positions. It is not safe
// for concurrent use (one goroutine polls).
type Consumer struct {
	c     *Client
	admin *Admin
	opts  ConsumerOptions

	parts []*consumedPartition
	rr    int // partition the next Poll looks at first (fairness)

	noSubscribe bool          // the server has no Subscribe: Fetch with prefetch
	ready       chan struct{} // capacity 1: a subscription pushed a result
	ctx         context.Context
	cancel      context.CancelFunc // ends the subscriptions
	subMu       sync.Mutex         // orders starting a subscription and Close
	subs        sync.WaitGroup     // subscription goroutines

	closeOnce sync.Once
	closed    chan struct{}
}

type consumedPartition struct {
	partition int32
	position  int64 // next offset to return
	end       int64 // without Follow: the high watermark at start
	committed int64 // last offset committed or read from the group; -1: none
	pre       *prefetch
	sub       *subscription

	// addr is the partition leader's address, learnt from redirects: a
	// hint that Poll and a prefetch still running from an earlier Poll
	// both update, so it has its own lock (leader, setLeader).
	addrMu sync.Mutex
	addr   string
}

func (cp *consumedPartition) leader() string {
	cp.addrMu.Lock()
	defer cp.addrMu.Unlock()
	return cp.addr
}

func (cp *consumedPartition) setLeader(addr string) {
	cp.addrMu.Lock()
	cp.addr = addr
	cp.addrMu.Unlock()
}

// prefetch is the next fetch of a partition, started as soon as Poll
// returned its previous records, so the server reads while the application
// processes. At most one fetch per partition runs at a time: Poll uses the
// prefetch when it is at the partition's position, else discards it.
type prefetch struct {
	off    int64
	cancel context.CancelFunc
	done   chan struct{}
	res    fetched
}

// NewConsumer resolves the consumer's start positions (the group's
// committed offsets, else opts.Start) and returns it.
func (c *Client) NewConsumer(ctx context.Context, opts ConsumerOptions) (*Consumer, error) {
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultFetchMaxBytes
	}
	cons := &Consumer{c: c, admin: c.Admin(), opts: opts, closed: make(chan struct{}), ready: make(chan struct{}, 1)}
	cons.ctx, cons.cancel = context.WithCancel(context.Background())
	ends, err := cons.admin.ListOffsets(ctx, opts.Topic, opts.Partitions, Latest())
	if err != nil {
		return nil, err
	}
	for _, po := range ends {
		cons.parts = append(cons.parts, &consumedPartition{partition: po.Partition, end: po.HighWatermark, committed: -1})
	}
	slices.SortFunc(cons.parts, func(a, b *consumedPartition) int { return int(a.partition - b.partition) })
	if len(cons.parts) == 0 {
		return nil, fmt.Errorf("consume %q: no partitions to read", opts.Topic)
	}
	start := make(map[int32]bool)
	if opts.Group != "" && !opts.IgnoreCommitted {
		offs, err := cons.admin.FetchOffsets(ctx, opts.Group, opts.Topic)
		if err != nil {
			return nil, err
		}
		for _, o := range offs {
			if cp := cons.part(o.Partition); cp != nil && o.Topic == opts.Topic {
				cp.position, cp.committed = o.Offset, o.Offset
				start[o.Partition] = true
			}
		}
	}
	var rest []int32
	for _, cp := range cons.parts {
		if !start[cp.partition] {
			rest = append(rest, cp.partition)
		}
	}
	if len(rest) > 0 {
		if err := cons.seek(ctx, rest, opts.Start); err != nil {
			return nil, err
		}
	}
	return cons, nil
}

func (cons *Consumer) part(p int32) *consumedPartition {
	for _, cp := range cons.parts {
		if cp.partition == p {
			return cp
		}
	}
	return nil
}

// Partitions returns the partitions the consumer reads, ascending.
func (cons *Consumer) Partitions() []int32 {
	out := make([]int32, len(cons.parts))
	for i, cp := range cons.parts {
		out[i] = cp.partition
	}
	return out
}

// Position returns the next offset Poll returns from partition p.
func (cons *Consumer) Position(p int32) (int64, bool) {
	cp := cons.part(p)
	if cp == nil {
		return 0, false
	}
	return cp.position, true
}

// End returns the high watermark partition p had when the consumer started:
// without Follow, Poll stops there.
func (cons *Consumer) End(p int32) (int64, bool) {
	cp := cons.part(p)
	if cp == nil {
		return 0, false
	}
	return cp.end, true
}

// Seek moves every partition to pos.
func (cons *Consumer) Seek(ctx context.Context, pos Position) error {
	return cons.seek(ctx, cons.Partitions(), pos)
}

// SeekPartition moves partition p to pos.
func (cons *Consumer) SeekPartition(ctx context.Context, p int32, pos Position) error {
	if cons.part(p) == nil {
		return fmt.Errorf("seek: the consumer does not read partition %d of %q", p, cons.opts.Topic)
	}
	return cons.seek(ctx, []int32{p}, pos)
}

func (cons *Consumer) seek(ctx context.Context, parts []int32, pos Position) error {
	if off, ok := pos.Offset(); ok {
		for _, p := range parts {
			cons.part(p).position = off
		}
		return nil
	}
	offs, err := cons.admin.ListOffsetsIsolated(ctx, cons.opts.Topic, parts, pos, cons.opts.Isolation)
	if err != nil {
		return err
	}
	for _, po := range offs {
		if cp := cons.part(po.Partition); cp != nil {
			cp.position = po.Offset
		}
	}
	return nil
}

// fetched is one partition's fetch result.
type fetched struct {
	cp   *consumedPartition
	from int64  // the offset it was read at
	addr string // subscriptions: the address that answered
	recs []ConsumedRecord
	next int64
	err  error
	// corrupt: a batch at next that does not decode, met after recs
	// (a subscription delivers it as its next result).
	corrupt *CorruptBatchError
}

// Poll returns the next records of the partitions that have any, each
// partition's in offset order, and advances past them. When none is
// available it long-polls up to MaxWait and may return no records. Without
// Follow it returns io.EOF once every partition reached its end. A position
// outside a partition's log fails with an *OutOfRangeError (see Seek); no
// position moves when Poll fails.
func (cons *Consumer) Poll(ctx context.Context) ([]ConsumedRecord, error) {
	select {
	case <-cons.closed:
		return nil, ErrClosed
	default:
	}
	var active []*consumedPartition
	for i := range cons.parts {
		cp := cons.parts[(cons.rr+i)%len(cons.parts)]
		if cons.opts.Follow || cp.position < cp.end {
			active = append(active, cp)
		}
	}
	cons.rr = (cons.rr + 1) % len(cons.parts)
	if len(active) == 0 {
		return nil, io.EOF
	}
	if !cons.noSubscribe {
		recs, err := cons.pollSubscribed(ctx, active)
		if !cons.noSubscribe {
			return recs, err
		}
	}
	// Take what is there now; long-poll only when nothing is.
	res := cons.fetchAll(ctx, active, 0)
	if n, err := count(res); err != nil || n > 0 {
		return cons.advance(res, err)
	}
	res = cons.fetchAll(ctx, active, cons.opts.MaxWait)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	_, err := count(res)
	return cons.advance(res, err)
}

func count(res []fetched) (int, error) {
	n := 0
	var err error
	for _, r := range res {
		n += len(r.recs)
		if r.err != nil && err == nil {
			err = r.err
		}
	}
	return n, err
}

// advance moves positions past res and returns the records; on err nothing
// moves.
func (cons *Consumer) advance(res []fetched, err error) ([]ConsumedRecord, error) {
	if err != nil {
		return nil, err
	}
	var out []ConsumedRecord
	for _, r := range res {
		if r.err != nil || r.next <= r.cp.position {
			continue
		}
		out = append(out, r.recs...)
		r.cp.position = r.next
		cons.startPrefetch(r.cp)
	}
	return out, nil
}

// startPrefetch fetches cp's next records in the background (no wait).
func (cons *Consumer) startPrefetch(cp *consumedPartition) {
	if !cons.opts.Follow && cp.position >= cp.end {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	pf := &prefetch{off: cp.position, cancel: cancel, done: make(chan struct{})}
	cp.pre = pf
	go func() {
		defer close(pf.done)
		defer cancel()
		go func() {
			select {
			case <-cons.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
		pf.res = cons.fetch(ctx, cp, pf.off, 0)
	}()
}

// fetchAll fetches the partitions concurrently. With a wait, the first
// answer with records cancels the others (their positions do not move).
func (cons *Consumer) fetchAll(ctx context.Context, parts []*consumedPartition, wait time.Duration) []fetched {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-cons.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	res := make([]fetched, len(parts))
	var wg sync.WaitGroup
	for i, cp := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if pf := cp.pre; pf != nil {
				cp.pre = nil
				if pf.off != cp.position {
					pf.cancel()
				}
				<-pf.done
				if pf.off == cp.position && pf.res.err == nil {
					res[i] = pf.res
					if wait == 0 || len(res[i].recs) > 0 {
						if wait > 0 {
							cancel()
						}
						return
					}
				}
			}
			res[i] = cons.fetch(ctx, cp, cp.position, wait)
			if wait > 0 && len(res[i].recs) > 0 {
				cancel()
			}
		}()
	}
	wg.Wait()
	for i := range res {
		err := res[i].err
		if err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled) {
			// Cancelled by a sibling, not a failure of its own.
			res[i].err = nil
		}
	}
	return res
}

func (cons *Consumer) fetch(ctx context.Context, cp *consumedPartition, off int64, wait time.Duration) fetched {
	r := fetched{cp: cp, next: off}
	var resp *logdv1.FetchResponse
	addr, err := cons.c.call(ctx, cp.leader(), func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = logdv1.NewLogClient(cc).Fetch(ctx, &logdv1.FetchRequest{
			Topic: cons.opts.Topic, Partition: cp.partition, Offset: off,
			MaxBytes: cons.opts.MaxBytes, MaxWaitMs: int32(wait.Milliseconds()),
			Isolation: cons.opts.Isolation.proto(),
		})
		return err
	})
	// After a failure that names no leader, ask the bootstrap node again
	// next time.
	switch {
	case err == nil:
		cp.setLeader(addr)
	case leaderOf(err) == "" && status.Code(err) != codes.OutOfRange:
		cp.setLeader("")
	}
	if err != nil {
		r.err = cons.readError(err, cp, off)
		return r
	}
	return cons.decode(cp, off, resp)
}

// readError is err of a fetch or subscription at off: an *OutOfRangeError,
// or err with context.
func (cons *Consumer) readError(err error, cp *consumedPartition, off int64) error {
	rerr := outOfRange(err, cons.opts.Topic, cp.partition, off)
	if _, ok := rerr.(*OutOfRangeError); !ok {
		rerr = fmt.Errorf("fetch %s/%d at offset %d: %w", cons.opts.Topic, cp.partition, off, err)
	}
	return rerr
}

// decode returns the records of resp at or after off (and, without Follow,
// before the partition's end). A batch that does not decode ends the
// records: when it is the first with records to return, the result fails
// with a *CorruptBatchError; after others, they are returned and the error
// is kept in corrupt for a subscription to deliver next (a fetch from the
// new position meets the batch first).
func (cons *Consumer) decode(cp *consumedPartition, off int64, resp *logdv1.FetchResponse) fetched {
	r := fetched{cp: cp, from: off, next: off}
	errStop := errors.New("stop")
	err := batch.Split(resp.GetBatches(), func(b []byte, info batch.Info) error {
		if !cons.opts.Follow && info.BaseOffset >= cp.end {
			return errStop
		}
		if info.IsControl() {
			// A transaction's marker (read_uncommitted reads carry them):
			// not a record of the application's.
			return nil
		}
		_, recs, err := batch.Decode(b, r.next)
		if err != nil {
			if info.LastOffset() < r.next {
				return nil // all below the position: not ours to report
			}
			cerr := &CorruptBatchError{Topic: cons.opts.Topic, Partition: cp.partition, FirstOffset: info.BaseOffset, LastOffset: info.LastOffset(), Err: err}
			if len(r.recs) == 0 {
				return cerr
			}
			r.corrupt = cerr
			return errStop
		}
		r.recs = slices.Grow(r.recs, len(recs))
		for _, br := range recs {
			if !cons.opts.Follow && br.Offset >= cp.end {
				break
			}
			rec := ConsumedRecord{
				Topic: cons.opts.Topic, Partition: cp.partition, Offset: br.Offset,
				Key: br.Key, Value: br.Value, Timestamp: time.UnixMilli(br.Timestamp),
			}
			for _, h := range br.Headers {
				rec.Headers = append(rec.Headers, Header{Key: h.Key, Value: h.Value})
			}
			r.recs = append(r.recs, rec)
			r.next = br.Offset + 1
		}
		return nil
	})
	var cerr *CorruptBatchError
	switch {
	case errors.As(err, &cerr):
		r.recs, r.next, r.err = nil, off, cerr
		return r
	case err != nil && err != errStop:
		r.recs, r.next = nil, off
		r.err = fmt.Errorf("fetch %s/%d at offset %d: bad batch from the server: %w", cons.opts.Topic, cp.partition, off, err)
		return r
	case r.corrupt != nil:
		return r
	}
	// Offsets with no record (skipped by the server, or batches after the
	// last record that a read_committed read left out) still advance the
	// position.
	if nxt := resp.GetNextOffset(); (len(r.recs) == 0 || err == nil) && nxt > r.next && (cons.opts.Follow || nxt <= cp.end) {
		r.next = nxt
	}
	return r
}

// Commit stores, for the consumer's group, the position after the last
// record Poll returned of each partition read since the last commit.
func (cons *Consumer) Commit(ctx context.Context) error {
	offs := make(map[int32]int64)
	for _, cp := range cons.parts {
		if cp.position != cp.committed {
			offs[cp.partition] = cp.position
		}
	}
	return cons.CommitOffsets(ctx, offs)
}

// CommitOffsets stores offsets (partition -> next offset to consume) for the
// consumer's group.
func (cons *Consumer) CommitOffsets(ctx context.Context, offsets map[int32]int64) error {
	if cons.opts.Group == "" {
		return fmt.Errorf("commit: the consumer has no group (set ConsumerOptions.Group)")
	}
	if len(offsets) == 0 {
		return nil
	}
	var list []CommittedOffset
	for p, off := range offsets {
		list = append(list, CommittedOffset{Topic: cons.opts.Topic, Partition: p, Offset: off})
	}
	if err := cons.admin.CommitOffsets(ctx, cons.opts.Group, list); err != nil {
		return err
	}
	for p, off := range offsets {
		if cp := cons.part(p); cp != nil {
			cp.committed = off
		}
	}
	return nil
}

// Close stops the consumer; a Poll in progress returns. It does not commit.
func (cons *Consumer) Close() error {
	cons.closeOnce.Do(func() {
		close(cons.closed)
		// A Poll in progress may be starting subscriptions: they see the
		// cancelled context; cp.sub belongs to Poll.
		cons.subMu.Lock()
		cons.cancel()
		cons.subMu.Unlock()
		cons.subs.Wait()
		for _, cp := range cons.parts {
			if pf := cp.pre; pf != nil {
				pf.cancel()
				<-pf.done
				cp.pre = nil
			}
		}
	})
	return nil
}
