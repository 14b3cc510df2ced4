package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
)

// maxStreamBytes bounds one fetch of a live tail: what a stream holds in
// memory at a time (plus one batch when a single batch is larger).
const maxStreamBytes = 256 << 10

// stream is one live tail being served.
type stream struct {
	h     *Handler
	w     http.ResponseWriter
	rc    *http.ResponseController
	topic string
	p     broker.Principal
	pos   position
	// lastWrite is when the stream last wrote to its client (for the
	// heartbeat).
	lastWrite time.Time
	// group, when set, gets the stream's position committed after each
	// write (at-most-once: a record is committed once it is written to
	// the connection, before the client has processed it).
	group     string
	committed []int64
	// readCommitted: isolation=read_committed (the default).
	readCommitted bool
}

// events serves GET /v1/topics/{topic}/events (see the package comment).
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	h.allowConsoleOrigin(w, r)
	s := &stream{h: h, w: w, rc: http.NewResponseController(w), topic: r.PathValue("topic"), p: h.principal(r)}
	if err := s.start(r); err != nil {
		var bad badRequest
		if errors.As(err, &bad) {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		writeCoreError(w, err)
		return
	}
	h.streams.Add(1)
	defer h.streams.Add(-1)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	// The starting position as an id-only event: an EventSource that
	// reconnects before the first record resumes from here.
	if err := s.write("retry: 2000\nid: " + s.pos.String() + "\n\n"); err != nil {
		return
	}
	if err := s.run(r.Context()); err != nil && r.Context().Err() == nil && !isWriteError(err) {
		st, body := errorStatus(err)
		b, _ := json.Marshal(struct {
			errorBody
			Status int `json:"status"`
		}{body, st})
		s.write("event: error\ndata: " + string(b) + "\n\n")
	}
}

// badRequest is a request error the client must fix (400).
type badRequest struct{ error }

// writeError wraps errors writing to the client: the stream just ends.
type writeErr struct{ error }

func isWriteError(err error) bool {
	var we writeErr
	return errors.As(err, &we)
}

// start reads the request's partitions, from= and Last-Event-ID, and sets
// the stream's starting position.
func (s *stream) start(r *http.Request) error {
	q := r.URL.Query()
	spec, err := offsets.ParseResetSpec(cmp(q.Get("from"), "latest"))
	if err != nil {
		return badRequest{fmt.Errorf("from=%q: %v", q.Get("from"), err)}
	}
	info, err := s.h.core.TopicLayout(r.Context(), s.p, s.topic)
	if err != nil {
		return err
	}
	s.group = q.Get("group")
	if s.readCommitted, err = readCommittedParam(q.Get("isolation")); err != nil {
		return badRequest{err}
	}
	resume, err := s.resumeAt(r)
	if err != nil {
		return err
	}
	parts := info.Partitions
	if ps := q.Get("partition"); ps != "" {
		n, err := intParam(ps, 0, "partition", 0, int64(len(info.Partitions))-1)
		if err != nil {
			return fmt.Errorf("%w: %v", broker.ErrUnknownPartition, err)
		}
		parts = parts[n : n+1]
	}
	for part := range resume {
		if !containsPartition(parts, part) {
			return badRequest{fmt.Errorf("Last-Event-ID names partition %d, which this stream does not read: reconnect with the same partition= as before", part)}
		}
	}
	for _, pi := range parts {
		next, ok := resume[pi.ID]
		if !ok {
			if next, err = s.resolve(r.Context(), spec, pi); err != nil {
				return err
			}
		}
		s.pos.parts = append(s.pos.parts, pi.ID)
		s.pos.next = append(s.pos.next, next)
	}
	s.committed = slices.Clone(s.pos.next)
	return nil
}

// resumeAt is where the request resumes: the Last-Event-ID's position,
// else the group's committed offsets (with group=), else nothing.
func (s *stream) resumeAt(r *http.Request) (map[int32]int64, error) {
	if id := cmp(r.Header.Get("Last-Event-ID"), r.URL.Query().Get("last_event_id")); id != "" {
		pos, err := parsePosition(id)
		if err != nil {
			return nil, badRequest{fmt.Errorf("Last-Event-ID: %v", err)}
		}
		return pos, nil
	}
	resume := map[int32]int64{}
	if s.group == "" {
		return resume, nil
	}
	cs, err := s.h.core.FetchOffsets(r.Context(), s.p, s.group, []string{s.topic})
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if c.Topic == s.topic {
			resume[c.Partition] = c.Offset
		}
	}
	return resume, nil
}

// commit stores the stream's position as the group's offsets, for the
// partitions that moved since the last commit.
func (s *stream) commit(ctx context.Context) error {
	if s.group == "" {
		return nil
	}
	var cs []offsets.Committed
	for i, next := range s.pos.next {
		if next != s.committed[i] {
			cs = append(cs, offsets.Committed{Topic: s.topic, Partition: s.pos.parts[i], Offset: next})
		}
	}
	if len(cs) == 0 {
		return nil
	}
	if err := s.h.core.CommitOffsets(ctx, s.p, s.group, "", -1, cs); err != nil {
		return err
	}
	copy(s.committed, s.pos.next)
	return nil
}

func containsPartition(ps []broker.PartitionInfo, id int32) bool {
	for _, p := range ps {
		if p.ID == id {
			return true
		}
	}
	return false
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// resolve turns from= into an offset of one partition (an explicit offset
// is clamped to the partition's range, as `logd consume --from` does).
func (s *stream) resolve(ctx context.Context, spec offsets.ResetSpec, pi broker.PartitionInfo) (int64, error) {
	// The bounds are the leader's (ListOffset): in a cluster this node's
	// replica may lag, or the node may have none.
	var failed error
	bound := func(which int64) int64 {
		off, _, err := s.h.core.ListOffset(ctx, s.p, s.topic, pi.ID, which)
		if err != nil && failed == nil {
			failed = err
		}
		return off
	}
	l := offsets.LogFuncs{
		Start: func() int64 { return bound(broker.Earliest) },
		HW:    func() int64 { return bound(broker.Latest) },
		ForTime: func(ts int64) (int64, error) {
			off, _, err := s.h.core.ListOffset(ctx, s.p, s.topic, pi.ID, ts)
			if err == nil && off < 0 { // no record that late
				off = bound(broker.Latest)
			}
			return off, err
		},
	}
	if spec.Kind == offsets.ResetLatest && s.readCommitted {
		// Where a read_committed reader starting at the end begins: the
		// last stable offset (before a transaction still open), not the
		// high watermark, which would skip that transaction's records.
		pos, err := s.h.core.ListOffsetsIsolated(ctx, s.p, s.topic, []int32{pi.ID}, broker.Latest, true)
		if err != nil {
			return 0, err
		}
		return pos[0].Offset, nil
	}
	res, err := spec.Resolve(time.Now(), l)
	if err == nil {
		err = failed
	}
	return res.Offset, err
}

// run sends records until the client goes away, the handler closes or
// an error ends the stream. Each partition is read by a goroutine of its
// own (readPartition), so that in a cluster each waits for records on the
// node that leads it; the writer takes their reads one at a time, and a
// partition is read again only once its last read was written: the
// stream holds at most one read per partition.
func (s *stream) run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reads := make(chan partitionRead)
	next := make([]chan int64, len(s.pos.parts))
	share := max(maxStreamBytes/len(s.pos.parts), 16<<10)
	for i := range s.pos.parts {
		next[i] = make(chan int64, 1)
		next[i] <- s.pos.next[i]
		wg.Go(func() { s.readPartition(ctx, i, share, next[i], reads) })
	}
	s.lastWrite = time.Now()
	beat := time.NewTimer(s.h.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.h.done:
			return errClosing
		case <-beat.C:
			if idle := time.Since(s.lastWrite); idle >= s.h.cfg.Heartbeat {
				if err := s.write(": heartbeat " + strconv.FormatInt(time.Now().Unix(), 10) + "\n\n"); err != nil {
					return err
				}
			}
			beat.Reset(max(s.h.cfg.Heartbeat-time.Since(s.lastWrite), time.Millisecond))
		case r := <-reads:
			err := r.err
			if err == nil {
				err = s.send(r.res)
				release(r.res)
			}
			if err == nil {
				err = s.commit(ctx)
			}
			if err != nil {
				return err
			}
			next[r.i] <- s.pos.next[r.i]
		}
	}
}

// errClosing ends the streams of a handler being closed.
var errClosing = kind.Errorf(kind.ErrShuttingDown, "the node is shutting down: reconnect to another node with the last event id")

// partitionRead is one partition's read, for the stream's writer.
type partitionRead struct {
	i   int // the partition's index in the stream's position
	res broker.FetchResult
	err error
}

// streamRetryFor bounds how long a partition's reads may fail with errors
// that pass (an election, a leader that stopped, a node that does not
// answer) before the stream ends with the error: meanwhile it retries,
// after streamRetryMin, then twice as long each time up to
// streamRetryMax.
const (
	streamRetryFor = 30 * time.Second
	streamRetryMin = 50 * time.Millisecond
	streamRetryMax = time.Second
)

// readPartition reads the stream's partition i from each offset next
// gives until ctx ends, and hands each read that has records, or fails
// for good, to reads.
func (s *stream) readPartition(ctx context.Context, i, share int, next <-chan int64, reads chan<- partitionRead) {
	for {
		var off int64
		select {
		case off = <-next:
		case <-ctx.Done():
			return
		}
		r := partitionRead{i: i}
		r.res, r.err = s.readAt(ctx, i, off, share)
		if ctx.Err() != nil {
			release(r.res)
			return
		}
		select {
		case reads <- r:
		case <-ctx.Done():
			release(r.res)
			return
		}
	}
}

// readAt reads partition i at off until there are records or an error
// that does not pass (retrying those that do, up to streamRetryFor).
func (s *stream) readAt(ctx context.Context, i int, off int64, share int) (broker.FetchResult, error) {
	wait := streamRetryMin
	var failing time.Time
	for {
		res, err := s.h.core.Fetch(ctx, broker.FetchRequest{Principal: s.p, MinBytes: 1, MaxBytes: share, MaxWait: s.h.cfg.Heartbeat, Decode: true,
			ReadCommitted: s.readCommitted, DropAborted: s.readCommitted,
			Partitions: []broker.FetchPartition{{Topic: s.topic, Partition: s.pos.parts[i], Offset: off, MaxBytes: share}}})
		if err == nil && len(res.Partitions) == 1 && res.Partitions[0].Err != nil {
			err = res.Partitions[0].Err
			release(res)
		}
		switch {
		case err == nil && len(res.Partitions) == 1 && len(res.Partitions[0].Batches) == 0:
			release(res) // nothing yet: wait again
			// (past what a read_committed read left out, if anything)
			off = max(off, res.Partitions[0].NextOffset)
			failing, wait = time.Time{}, streamRetryMin
			continue
		case err == nil || ctx.Err() != nil || !passes(err):
			return res, err
		case failing.IsZero():
			failing = time.Now()
		case time.Since(failing) > streamRetryFor:
			return broker.FetchResult{}, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return broker.FetchResult{}, ctx.Err()
		}
		wait = min(2*wait, streamRetryMax)
	}
}

// passes reports whether a read's error is one that passes: the partition
// has no leader now, the node asked does not lead it, or a node did not
// answer or is stopping (in a cluster, another takes over).
func passes(err error) bool {
	var nl *broker.NotLeaderError
	return errors.As(err, &nl) || errors.Is(err, kind.ErrUnavailable) || errors.Is(err, kind.ErrNoLeader) ||
		errors.Is(err, kind.ErrShuttingDown)
}

// send writes a fetch response's records as events, each with the
// position after it, then flushes. A write that waits longer than the send
// timeout fails, which ends the stream.
func (s *stream) send(res broker.FetchResult) error {
	s.rc.SetWriteDeadline(time.Now().Add(s.h.cfg.SendTimeout))
	sent := false
	for _, fp := range res.Partitions {
		if fp.Err != nil {
			return fp.Err
		}
		i := indexOf(s.pos.parts, fp.Partition)
		if i < 0 || len(fp.Batches) == 0 {
			continue
		}
		err := batch.Split(fp.Batches, func(b []byte, info batch.Info) error {
			if info.NextOffset() <= s.pos.next[i] || info.IsControl() {
				return nil // below the position, or a transaction's marker
			}
			_, recs, err := batch.Decode(b, s.pos.next[i])
			if err != nil {
				return fmt.Errorf("partition %d at offset %d: %w", fp.Partition, info.BaseOffset, err)
			}
			for _, rec := range recs {
				s.pos.next[i] = rec.Offset + 1
				if err := s.event(toRecordJSON(s.topic, fp.Partition, rec)); err != nil {
					return err
				}
				sent = true
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if !sent {
		return nil
	}
	return s.flush()
}

func indexOf(ps []int32, p int32) int {
	for i, x := range ps {
		if x == p {
			return i
		}
	}
	return -1
}

// event writes one record event (buffered; send flushes).
func (s *stream) event(rec recordJSON) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(s.w, "event: record\nid: "+s.pos.String()+"\ndata: "); err != nil {
		return writeErr{err}
	}
	if _, err := s.w.Write(append(data, '\n', '\n')); err != nil {
		return writeErr{err}
	}
	return nil
}

// write writes and flushes text within the send timeout.
func (s *stream) write(text string) error {
	s.rc.SetWriteDeadline(time.Now().Add(s.h.cfg.SendTimeout))
	if _, err := io.WriteString(s.w, text); err != nil {
		return writeErr{err}
	}
	return s.flush()
}

func (s *stream) flush() error {
	if err := s.rc.Flush(); err != nil {
		return writeErr{err}
	}
	s.lastWrite = time.Now()
	return nil
}
