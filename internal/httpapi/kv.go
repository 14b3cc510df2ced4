package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
)

// The key-value view of a compacted topic (docs/kv.md, docs/http.md):
//
//	GET    /v1/topics/{topic}/keys/{key}   the key's newest record (404: none); ?stale=true
//	PUT    /v1/topics/{topic}/keys/{key}   the body is the new value
//	DELETE /v1/topics/{topic}/keys/{key}   a tombstone
//	GET    /v1/topics/{topic}/keys         a page of keys: ?prefix= &after= &limit= &stale=
//	GET    /v1/topics/{topic}/keys?watch=true&prefix=   puts and deletes as Server-Sent Events
//
// A record's offset is its revision: GET answers it as the ETag, and PUT
// or DELETE with If-Match: <offset> (or If-None-Match: * for a key with
// no value) is a compare-and-set, refused with 412 when the key moved on.

// KVCore is what the key-value routes need of the core (broker.AnyNode):
// a Core without it answers them 501.
type KVCore interface {
	KVGet(ctx context.Context, pr broker.Principal, topic string, key []byte, opts broker.KVGetOptions) (broker.KVRecord, bool, error)
	KVPut(ctx context.Context, pr broker.Principal, topic string, put broker.KVPut) (broker.KVPutResult, error)
	KVList(ctx context.Context, pr broker.Principal, topic string, r broker.KVListRequest) (broker.KVPage, error)
	KVWatch(ctx context.Context, pr broker.Principal, topic string, prefix []byte, fn func(broker.KVRecord) error) error
}

var _ KVCore = broker.AnyNode{}

// kvRoutes registers the key-value routes.
func (h *Handler) kvRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /v1/topics/{topic}/keys/{key...}", h.kvGet)
	m.HandleFunc("PUT /v1/topics/{topic}/keys/{key...}", h.kvPut)
	m.HandleFunc("DELETE /v1/topics/{topic}/keys/{key...}", h.kvPut)
	m.HandleFunc("GET /v1/topics/{topic}/keys", h.kvList)
}

// kvPutJSON is a put's answer.
type kvPutJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp string `json:"timestamp"`
}

// kvListJSON is a page of keys.
type kvListJSON struct {
	Records []recordJSON `json:"records"`
	More    bool         `json:"more"`
	// Next is the after of the next page (when More).
	Next string `json:"next,omitempty"`
}

func (h *Handler) kvCore(w http.ResponseWriter) (KVCore, bool) {
	c, ok := h.core.(KVCore)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this server does not serve the key-value view")
	}
	return c, ok
}

func kvRecordJSON(topic string, r broker.KVRecord) recordJSON {
	return toRecordJSON(topic, r.Partition, batch.Record{Offset: r.Offset, Timestamp: r.TimestampMs, Key: r.Key, Value: r.Value, Headers: r.Headers})
}

func (h *Handler) kvGet(w http.ResponseWriter, r *http.Request) {
	c, ok := h.kvCore(w)
	if !ok {
		return
	}
	stale, err := boolParam(r, "stale")
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	topic, key := r.PathValue("topic"), r.PathValue("key")
	rec, found, err := c.KVGet(r.Context(), h.principal(r), topic, []byte(key), broker.KVGetOptions{Stale: stale})
	switch {
	case err != nil:
		writeCoreError(w, err)
	case !found:
		writeError(w, http.StatusNotFound, "topic %q has no value for key %q", topic, key)
	default:
		w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(rec.Offset, 10)))
		writeJSON(w, http.StatusOK, kvRecordJSON(topic, rec))
	}
}

// kvPut serves PUT (the body is the value) and DELETE (a tombstone).
func (h *Handler) kvPut(w http.ResponseWriter, r *http.Request) {
	c, ok := h.kvCore(w)
	if !ok {
		return
	}
	topic := r.PathValue("topic")
	put := broker.KVPut{Key: []byte(r.PathValue("key"))}
	expected, err := precondition(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	put.Expected = expected
	if r.Method == http.MethodPut {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			writeError(w, http.StatusRequestEntityTooLarge, "the value is over %d bytes", tooLarge.Limit)
			return
		case err != nil:
			writeError(w, http.StatusBadRequest, "read the value: %v", err)
			return
		}
		put.Value = append([]byte{}, body...) // empty, not a tombstone
	}
	res, err := c.KVPut(r.Context(), h.principal(r), topic, put)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(res.Offset, 10)))
	writeJSON(w, http.StatusOK, kvPutJSON{Topic: topic, Partition: res.Partition, Offset: res.Offset,
		Timestamp: time.UnixMilli(res.TimestampMs).UTC().Format("2006-01-02T15:04:05.000Z07:00")})
}

// precondition reads If-Match: <offset> (the ETag a get answered) or
// If-None-Match: * (the key has no value) as a put's expected offset.
func precondition(r *http.Request) (*int64, error) {
	if v := r.Header.Get("If-None-Match"); v != "" {
		if strings.TrimSpace(v) != "*" {
			return nil, errors.New("If-None-Match: only * (the key has no value) is supported")
		}
		absent := broker.KVAbsent
		return &absent, nil
	}
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(v, "W/"), `"`), 10, 64)
	if err != nil || n < 0 {
		return nil, errors.New("If-Match: want the offset of the key's newest record (its ETag), e.g. If-Match: \"42\"")
	}
	return &n, nil
}

func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest{errors.New(name + ": want true or false, got " + strconv.Quote(v))}
	}
	return b, nil
}

func (h *Handler) kvList(w http.ResponseWriter, r *http.Request) {
	c, ok := h.kvCore(w)
	if !ok {
		return
	}
	q := r.URL.Query()
	watch, err := boolParam(r, "watch")
	stale, err2 := boolParam(r, "stale")
	if err = errors.Join(err, err2); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	topic := r.PathValue("topic")
	if watch {
		h.kvWatch(w, r, c, topic, []byte(q.Get("prefix")))
		return
	}
	req := broker.KVListRequest{Prefix: []byte(q.Get("prefix")), Stale: stale}
	if q.Has("after") {
		req.After = []byte(q.Get("after"))
	}
	if v := q.Get("limit"); v != "" {
		if req.Limit, err = strconv.Atoi(v); err != nil {
			writeError(w, http.StatusBadRequest, "limit: want a number from 1 to %d, got %q", broker.KVListMax, v)
			return
		}
	}
	page, err := c.KVList(r.Context(), h.principal(r), topic, req)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	out := kvListJSON{Records: make([]recordJSON, len(page.Records)), More: page.More}
	for i, rec := range page.Records {
		out.Records[i] = kvRecordJSON(topic, rec)
	}
	if page.More {
		out.Next = string(page.Last)
	}
	writeJSON(w, http.StatusOK, out)
}

// kvWatch streams the puts and deletes (a null value) of the keys with
// prefix as "event: record" Server-Sent Events, with heartbeat comments,
// until the client goes, the handler closes, or the core fails (an
// "event: error").
func (h *Handler) kvWatch(w http.ResponseWriter, r *http.Request, c KVCore, topic string, prefix []byte) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	rc := http.NewResponseController(w)
	var mu sync.Mutex // one writer at a time: the watch or the heartbeat
	started := false
	write := func(text string) error {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			started = true
			hdr := w.Header()
			hdr.Set("Content-Type", "text/event-stream")
			hdr.Set("Cache-Control", "no-store")
			hdr.Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
		}
		rc.SetWriteDeadline(time.Now().Add(h.cfg.SendTimeout))
		if _, err := io.WriteString(w, text); err != nil {
			return writeErr{err}
		}
		if err := rc.Flush(); err != nil {
			return writeErr{err}
		}
		return nil
	}
	h.streams.Add(1)
	defer h.streams.Add(-1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { h.kvBeat(ctx, cancel, write) })
	if err := write(": watching\n\n"); err != nil {
		return
	}
	err := c.KVWatch(ctx, h.principal(r), topic, prefix, func(rec broker.KVRecord) error {
		data, err := json.Marshal(kvRecordJSON(topic, rec))
		if err != nil {
			return err
		}
		return write("event: record\ndata: " + string(data) + "\n\n")
	})
	if err != nil && ctx.Err() == nil && !isWriteError(err) {
		st, body := errorStatus(err)
		b, _ := json.Marshal(struct {
			errorBody
			Status int `json:"status"`
		}{body, st})
		write("event: error\ndata: " + string(b) + "\n\n")
	}
}

// kvBeat writes a heartbeat comment every heartbeat interval until ctx
// ends, and ends the watch when the handler closes or a write fails.
func (h *Handler) kvBeat(ctx context.Context, cancel func(), write func(string) error) {
	t := time.NewTicker(h.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.done:
			cancel()
			return
		case <-t.C:
			if err := write(": heartbeat " + strconv.FormatInt(time.Now().Unix(), 10) + "\n\n"); err != nil {
				cancel()
				return
			}
		}
	}
}
