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
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
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
}

// events serves GET /v1/topics/{topic}/events (see the package comment).
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
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
	l := offsets.LogFuncs{
		Start: func() int64 { return pi.LogStart },
		HW:    func() int64 { return pi.HighWatermark },
		ForTime: func(ts int64) (int64, error) {
			off, _, err := s.h.core.ListOffset(ctx, s.p, s.topic, pi.ID, ts)
			if err == nil && off < 0 { // no record that late
				off = pi.HighWatermark
			}
			return off, err
		},
	}
	res, err := spec.Resolve(time.Now(), l)
	return res.Offset, err
}

// run sends records until the client goes away or an error ends the
// stream. It holds one fetch response at a time.
func (s *stream) run(ctx context.Context) error {
	s.lastWrite = time.Now()
	fps := make([]broker.FetchPartition, len(s.pos.parts))
	share := max(maxStreamBytes/len(fps), 16<<10)
	for ctx.Err() == nil {
		if idle := time.Since(s.lastWrite); idle >= s.h.cfg.Heartbeat {
			if err := s.write(": heartbeat " + strconv.FormatInt(time.Now().Unix(), 10) + "\n\n"); err != nil {
				return err
			}
		}
		for i := range fps {
			fps[i] = broker.FetchPartition{Topic: s.topic, Partition: s.pos.parts[i], Offset: s.pos.next[i], MaxBytes: share}
		}
		wait := s.h.cfg.Heartbeat - time.Since(s.lastWrite)
		res, err := s.h.core.Fetch(ctx, broker.FetchRequest{Principal: s.p, Partitions: fps,
			MinBytes: 1, MaxBytes: maxStreamBytes, MaxWait: max(wait, time.Millisecond), Decode: true})
		if err != nil {
			return err
		}
		err = s.send(res)
		release(res)
		if err == nil {
			err = s.commit(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
			if info.NextOffset() <= s.pos.next[i] {
				return nil
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
