package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
)

const (
	defaultReadMax = 100
	maxReadMax     = 1000
	// readMaxBytes bounds one GET records' fetch (the core answers at
	// least one whole batch even when it is larger).
	readMaxBytes = 1 << 20
	maxReadWait  = 30 * time.Second
)

type readAnswer struct {
	Records       []recordJSON `json:"records"`
	NextOffset    int64        `json:"next_offset"`
	LogStart      int64        `json:"log_start"`
	HighWatermark int64        `json:"high_watermark"`
}

// readRecords answers GET /v1/topics/{topic}/records?partition=P&offset=O&max=N[&wait=DUR]
// (or time=T instead of offset=O): at most max records of one partition
// from offset (default: the log start), waiting up to wait for the first
// when there is none yet.
func (h *Handler) readRecords(w http.ResponseWriter, r *http.Request) {
	topic, q := r.PathValue("topic"), r.URL.Query()
	part, err := intParam(q.Get("partition"), 0, "partition", 0, 1<<31-1)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	limit, err := intParam(q.Get("max"), defaultReadMax, "max", 1, maxReadMax)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	wait, err := waitParam(q.Get("wait"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	committed, err := readCommittedParam(q.Get("isolation"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	p := h.principal(r)
	offset, err := h.readStart(r, p, topic, int32(part))
	if err != nil {
		var bad badRequest
		if errors.As(err, &bad) {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		writeCoreError(w, err)
		return
	}
	res, err := h.core.Fetch(r.Context(), broker.FetchRequest{Principal: p, MaxBytes: readMaxBytes, MaxWait: wait, MinBytes: 1, Decode: true,
		ReadCommitted: committed, DropAborted: committed,
		Partitions: []broker.FetchPartition{{Topic: topic, Partition: int32(part), Offset: offset, MaxBytes: readMaxBytes}}})
	if err != nil {
		writeCoreError(w, err)
		return
	}
	defer release(res)
	if len(res.Partitions) != 1 {
		writeError(w, http.StatusInternalServerError, "the core answered %d partitions for 1", len(res.Partitions))
		return
	}
	fp := res.Partitions[0]
	if fp.Err != nil {
		writeCoreError(w, fp.Err)
		return
	}
	recs, next, err := decodeRecords(topic, fp.Partition, fp.Batches, offset, int(limit))
	if len(recs) < int(limit) {
		// Past batches a read_committed read left out at the end.
		next = max(next, fp.NextOffset)
	}
	// The records are decoded: the node's read budget is not held while a
	// slow client takes the answer (the HTTP connection cap bounds those).
	release(res)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, readAnswer{Records: recs, NextOffset: next, LogStart: fp.LogStart, HighWatermark: fp.HighWatermark})
}

// readStart is where a read starts: offset=, else the first record at or
// after time= (the high watermark when there is none that late), else the
// log start.
func (h *Handler) readStart(r *http.Request, p broker.Principal, topic string, part int32) (int64, error) {
	q := r.URL.Query()
	offset, err := intParam(q.Get("offset"), -1, "offset", 0, 1<<63-1)
	if err != nil {
		return 0, badRequest{err}
	}
	ts := q.Get("time")
	switch {
	case offset >= 0 && ts != "":
		return 0, badRequest{fmt.Errorf("offset= and time= both given: give one")}
	case offset >= 0:
		return offset, nil
	case ts == "":
		offset, _, err = h.core.ListOffset(r.Context(), p, topic, part, broker.Earliest)
		return offset, err
	}
	ms, err := parseTime(ts)
	if err != nil {
		return 0, badRequest{err}
	}
	if offset, _, err = h.core.ListOffset(r.Context(), p, topic, part, ms); err == nil && offset < 0 {
		offset, _, err = h.core.ListOffset(r.Context(), p, topic, part, broker.Latest)
	}
	return offset, err
}

// parseTime reads time=: RFC 3339 (2026-12-01T13:02:11Z) or milliseconds
// since the Unix epoch.
func parseTime(s string) (int64, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	return 0, fmt.Errorf("time=%q: want an RFC 3339 time (2026-12-01T13:02:11Z) or milliseconds since the Unix epoch", s)
}

func release(res broker.FetchResult) {
	if res.Release != nil {
		res.Release()
	}
}

// decodeRecords decodes whole batches into at most limit records from
// offset on, and returns the offset after the last one (offset when there
// is none).
func decodeRecords(topic string, part int32, batches []byte, offset int64, limit int) ([]recordJSON, int64, error) {
	out := []recordJSON{}
	next := offset
	errFull := errors.New("full")
	err := batch.Split(batches, func(b []byte, info batch.Info) error {
		if info.NextOffset() <= next {
			return nil
		}
		if info.IsControl() {
			// A transaction's marker (read_uncommitted reads carry
			// them): no record of the application's, but passed.
			if len(out) < limit {
				next = info.NextOffset()
			}
			return nil
		}
		_, recs, err := batch.Decode(b, next)
		if err != nil {
			return fmt.Errorf("partition %d at offset %d: %w", part, info.BaseOffset, err)
		}
		for _, rec := range recs {
			if len(out) == limit {
				return errFull
			}
			out = append(out, toRecordJSON(topic, part, rec))
			next = rec.Offset + 1
		}
		// A batch's last records may have been removed by compaction in
		// Kafka; logd's never are, but the next offset follows the batch.
		if len(out) < limit {
			next = max(next, info.NextOffset())
		}
		return nil
	})
	if err != nil && err != errFull {
		return nil, offset, err
	}
	return out, next, nil
}

// intParam parses a query parameter in [lo, hi]; empty gives def.
func intParam(s string, def int64, name string, lo, hi int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%q: want a whole number from %d to %d", name, s, lo, hi)
	}
	return n, nil
}

func waitParam(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > maxReadWait {
		return 0, fmt.Errorf("wait=%q: want a duration from 0s to %s (e.g. 5s)", s, maxReadWait)
	}
	return d, nil
}
