package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
)

// Share groups over HTTP (docs/queues.md, docs/http.md): pull with
// explicit acknowledgement, as Pub/Sub and SQS do.
//
//	POST /v1/topics/{topic}/share/{group}/fetch  {"member", "max_records", "wait_ms"}
//	POST /v1/topics/{topic}/share/{group}/ack    {"member", "accept", "release", "reject"}
//
// HTTP has no session: each call opens the member's share session on the
// node anew (records are held by the member, not by a session), so a
// member may fetch on one request and acknowledge on another.

// ShareCore is what the share routes need of the core (a broker alone):
// a Core without it answers them 501.
type ShareCore interface {
	ShareFetch(ctx context.Context, r broker.ShareFetchRequest) (broker.ShareFetchResult, error)
	ShareAcknowledge(ctx context.Context, r broker.ShareFetchRequest) (broker.ShareFetchResult, error)
}

var _ ShareCore = broker.AnyNode{}

// shareRoutes registers the share routes.
func (h *Handler) shareRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /v1/topics/{topic}/share/{group}/fetch", h.shareFetch)
	m.HandleFunc("POST /v1/topics/{topic}/share/{group}/ack", h.shareAck)
}

// The bounds of a share fetch.
const (
	defaultShareRecords = 100
	maxShareRecords     = 10000
	maxShareWait        = 30 * time.Second
)

type shareFetchJSON struct {
	Member     string `json:"member"`
	MaxRecords int    `json:"max_records"`
	WaitMs     int64  `json:"wait_ms"`
}

type shareRecordJSON struct {
	recordJSON
	DeliveryCount int `json:"delivery_count"`
}

type shareFetchAnswer struct {
	Records      []shareRecordJSON `json:"records"`
	LockDeadline string            `json:"lock_deadline"`
}

type shareIDJSON struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	// Reason, in "reject" only, is why: the record's dead letter carries
	// it (cut to broker.MaxShareReasonBytes).
	Reason string `json:"reason,omitempty"`
}

type shareAckJSON struct {
	Member  string        `json:"member"`
	Accept  []shareIDJSON `json:"accept"`
	Release []shareIDJSON `json:"release"`
	Reject  []shareIDJSON `json:"reject"`
}

type shareNotApplied struct {
	Partition int32  `json:"partition"`
	Error     string `json:"error"`
}

type shareAckAnswer struct {
	NotApplied []shareNotApplied `json:"not_applied"`
}

func (h *Handler) shareCore(w http.ResponseWriter) (ShareCore, bool) {
	c, ok := h.core.(ShareCore)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this server does not serve share groups")
	}
	return c, ok
}

// readShareBody decodes a JSON body into v within the body limit,
// answering 400 or 413 itself when it cannot.
func (h *Handler) readShareBody(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "the body is over %d bytes", tooLarge.Limit)
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, "read the body: %v", err)
		return false
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "the body is not the JSON object this endpoint takes: %v (see docs/http.md)", err)
		return false
	}
	return true
}

func (h *Handler) shareFetch(w http.ResponseWriter, r *http.Request) {
	c, ok := h.shareCore(w)
	if !ok {
		return
	}
	var body shareFetchJSON
	if !h.readShareBody(w, r, &body) {
		return
	}
	switch {
	case body.Member == "":
		writeError(w, http.StatusBadRequest, `name the member: {"member": "worker-1"} (any id unique in the group)`)
		return
	case body.MaxRecords < 0 || body.MaxRecords > maxShareRecords:
		writeError(w, http.StatusBadRequest, "max_records %d: give 1 to %d (0: %d)", body.MaxRecords, maxShareRecords, defaultShareRecords)
		return
	case body.WaitMs < 0 || time.Duration(body.WaitMs)*time.Millisecond > maxShareWait:
		writeError(w, http.StatusBadRequest, "wait_ms %d: give 0 to %d", body.WaitMs, maxShareWait.Milliseconds())
		return
	}
	if body.MaxRecords == 0 {
		body.MaxRecords = defaultShareRecords
	}
	topic, group, pr := r.PathValue("topic"), r.PathValue("group"), h.principal(r)
	info, err := h.core.TopicLayout(r.Context(), pr, topic)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	req := broker.ShareFetchRequest{Principal: pr, Group: group, Member: body.Member, MaxRecords: body.MaxRecords,
		MaxWait: time.Duration(body.WaitMs) * time.Millisecond}
	for _, p := range info.Partitions {
		req.Partitions = append(req.Partitions, broker.ShareFetchPartition{SharePartition: broker.SharePartition{Topic: topic, Partition: p.ID}})
	}
	res, err := c.ShareFetch(r.Context(), req)
	if res.Release != nil {
		defer res.Release() // once the answer is written
	}
	if err == nil {
		err = shareCodeError(res.Code, res.Message)
	}
	if err != nil {
		writeShareError(w, err)
		return
	}
	ans, gaps, err := shareAnswer(res)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	if len(gaps) > 0 {
		// Offsets with no record the member sees are done at once.
		h.shareApply(r.Context(), c, pr, group, body.Member, gaps)
	}
	writeJSON(w, http.StatusOK, ans)
}

// shareAnswer is a fetch's records and its acquired offsets that hold no
// data record (control records, compaction holes), as acknowledgements.
func shareAnswer(res broker.ShareFetchResult) (shareFetchAnswer, []broker.ShareFetchPartition, error) {
	ans := shareFetchAnswer{Records: []shareRecordJSON{},
		LockDeadline: time.Now().Add(time.Duration(res.LockMs) * time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	var gaps []broker.ShareFetchPartition
	for _, p := range res.Partitions {
		if p.Err != nil {
			return ans, nil, p.Err
		}
		seen := map[int64]bool{}
		err := batch.Split(p.Batches, func(one []byte, info batch.Info) error {
			if info.IsControl() {
				return nil
			}
			_, recs, err := batch.Decode(one, 0)
			if err != nil {
				return err
			}
			for _, rec := range recs {
				if n, ok := acquiredCount(p.Acquired, rec.Offset); ok {
					seen[rec.Offset] = true
					ans.Records = append(ans.Records, shareRecordJSON{toRecordJSON(p.Topic, p.Partition, rec), n})
				}
			}
			return nil
		})
		if err != nil {
			return ans, nil, err
		}
		gp := broker.ShareFetchPartition{SharePartition: p.SharePartition}
		for _, rg := range p.Acquired {
			for o := rg.First; o <= rg.Last; o++ {
				if !seen[o] {
					gp.Acks = append(gp.Acks, broker.ShareAck{First: o, Last: o, Types: []broker.ShareAckType{0}})
				}
			}
		}
		if len(gp.Acks) > 0 {
			gaps = append(gaps, gp)
		}
	}
	return ans, gaps, nil
}

func acquiredCount(rs []broker.ShareRange, o int64) (int, bool) {
	for _, r := range rs {
		if o >= r.First && o <= r.Last {
			return int(r.DeliveryCount), true
		}
	}
	return 0, false
}

// shareCodeError is the error of a share code that is not OK.
func shareCodeError(code broker.ShareCode, msg string) error {
	if code == broker.ShareOK {
		return nil
	}
	return shareError{code, msg}
}

// shareError is a share request's refusal: 409 for states a member
// resolves by fetching again, 400 for a malformed one, 501 where share
// groups are not served.
type shareError struct {
	code broker.ShareCode
	msg  string
}

func (e shareError) Error() string { return e.msg }

func (e shareError) status() int {
	switch e.code {
	case broker.ShareInvalidRequest:
		return http.StatusBadRequest
	case broker.ShareUnsupported:
		return http.StatusNotImplemented
	}
	return http.StatusConflict
}

// shareApply opens the member's session and applies acks in it: the
// outcome of each partition, or the call's error.
func (h *Handler) shareApply(ctx context.Context, c ShareCore, pr broker.Principal, group, member string,
	acks []broker.ShareFetchPartition) (broker.ShareFetchResult, error) {
	r := broker.ShareFetchRequest{Principal: pr, Group: group, Member: member}
	res, err := c.ShareAcknowledge(ctx, r)
	if err == nil {
		err = shareCodeError(res.Code, res.Message)
	}
	if err != nil {
		return res, err
	}
	r.SessionEpoch, r.Partitions = 1, acks
	res, err = c.ShareAcknowledge(ctx, r)
	if err == nil {
		err = shareCodeError(res.Code, res.Message)
	}
	return res, err
}

func (h *Handler) shareAck(w http.ResponseWriter, r *http.Request) {
	c, ok := h.shareCore(w)
	if !ok {
		return
	}
	var body shareAckJSON
	if !h.readShareBody(w, r, &body) {
		return
	}
	if body.Member == "" {
		writeError(w, http.StatusBadRequest, `name the member that fetched the records: {"member": "worker-1", "accept": [{"partition": 0, "offset": 5}]}`)
		return
	}
	topic := r.PathValue("topic")
	acks, err := shareAcks(topic, body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	res, err := h.shareApply(r.Context(), c, h.principal(r), r.PathValue("group"), body.Member, acks)
	if err != nil {
		writeShareError(w, err)
		return
	}
	ans := shareAckAnswer{NotApplied: []shareNotApplied{}}
	for _, p := range res.Partitions {
		switch {
		case p.AckCode == broker.ShareInvalidRequest:
			writeError(w, http.StatusBadRequest, "partition %d: %v", p.Partition, p.AckErr)
			return
		case p.AckCode == broker.ShareOK && p.AckErr != nil:
			writeShareError(w, p.AckErr)
			return
		case p.AckCode != broker.ShareOK:
			ans.NotApplied = append(ans.NotApplied, shareNotApplied{p.Partition,
				"a record of this partition is not held by the member (its lock expired or it was acknowledged): none of its acknowledgements was applied; fetch again"})
		}
	}
	writeJSON(w, http.StatusOK, ans)
}

// shareAcks groups the body's ids by partition, refusing an id named twice.
func shareAcks(topic string, body shareAckJSON) ([]broker.ShareFetchPartition, error) {
	var parts []broker.ShareFetchPartition
	index := map[int32]int{}
	seen := map[[2]int64]bool{}
	for t, ids := range [][]shareIDJSON{broker.ShareAckType(1): body.Accept, 2: body.Release, 3: body.Reject} {
		for _, id := range ids {
			if id.Partition < 0 || id.Offset < 0 {
				return nil, fmt.Errorf("partition %d offset %d: both are 0 or more", id.Partition, id.Offset)
			}
			key := [2]int64{int64(id.Partition), id.Offset}
			if seen[key] {
				return nil, fmt.Errorf("partition %d offset %d is named twice", id.Partition, id.Offset)
			}
			seen[key] = true
			if id.Reason != "" && t != 3 {
				return nil, fmt.Errorf("partition %d offset %d: a reason goes with a reject only", id.Partition, id.Offset)
			}
			i, ok := index[id.Partition]
			if !ok {
				i = len(parts)
				index[id.Partition] = i
				parts = append(parts, broker.ShareFetchPartition{SharePartition: broker.SharePartition{Topic: topic, Partition: id.Partition}})
			}
			parts[i].Acks = append(parts[i].Acks, broker.ShareAck{First: id.Offset, Last: id.Offset, Types: []broker.ShareAckType{broker.ShareAckType(t)}})
			if id.Reason != "" {
				if parts[i].Reasons == nil {
					parts[i].Reasons = map[int64]string{}
				}
				parts[i].Reasons[id.Offset] = id.Reason
			}
		}
	}
	if len(parts) == 0 {
		return nil, errors.New(`nothing to acknowledge: give "accept", "release" or "reject" lists of {"partition", "offset"}`)
	}
	return parts, nil
}

// writeShareError answers a share refusal with its status, any other
// error as writeCoreError does.
func writeShareError(w http.ResponseWriter, err error) {
	var se shareError
	if errors.As(err, &se) {
		writeError(w, se.status(), "%s", se.msg)
		return
	}
	writeCoreError(w, err)
}
