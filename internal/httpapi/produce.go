package httpapi

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
)

// maxIdempotencyKey bounds the Idempotency-Key header's length.
const maxIdempotencyKey = 256

// producedJSON is one record's place in a produce answer.
type producedJSON struct {
	Partition int32  `json:"partition"`
	Offset    *int64 `json:"offset,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Error     string `json:"error,omitempty"`
}

type produceAnswer struct {
	Error string `json:"error,omitempty"`
	// Leader is the node to send the failed records to (status 421).
	Leader  *nodeJSON      `json:"leader,omitempty"`
	Records []producedJSON `json:"records"`
}

func (h *Handler) produce(w http.ResponseWriter, r *http.Request) {
	if msg := jsonContentType(r.Header.Get("Content-Type")); msg != "" {
		writeError(w, http.StatusUnsupportedMediaType, "%s", msg)
		return
	}
	topic := r.PathValue("topic")
	acks, ok := parseAcks(r.URL.Query().Get("acks"))
	if !ok {
		writeError(w, http.StatusBadRequest, "acks=%q: want all (the default) or leader", r.URL.Query().Get("acks"))
		return
	}
	idem := r.Header.Get("Idempotency-Key")
	if len(idem) > maxIdempotencyKey {
		writeError(w, http.StatusBadRequest, "Idempotency-Key is %d bytes: use at most %d (a UUID is plenty)", len(idem), maxIdempotencyKey)
		return
	}
	body, err := decodeProduceBody(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		if isMaxBytes(err) {
			writeError(w, http.StatusRequestEntityTooLarge, "request body over %d bytes: send fewer or smaller records per request", h.cfg.MaxBodyBytes)
			return
		}
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	recs := toRecords(body.Records)
	prod := int64(-1)
	if idem != "" {
		prod = idempotentProducerID(idem)
	}
	writes, err := h.core.ProduceRecords(r.Context(), broker.RecordsRequest{Principal: h.principal(r), Topic: topic,
		Records: recs, Acks: acks, ProducerID: prod})
	if err != nil {
		writeCoreError(w, err)
		return
	}
	answerProduce(w, writes, len(body.Records))
}

// toRecords converts the request's records for the broker (which routes
// them: the partition a record names, else its key's, else one partition
// for the request's unkeyed records, chosen from the Idempotency-Key when
// there is one so a retry goes the same way). Headers are sorted by name,
// so a retry encodes the same bytes.
func toRecords(in []produceRecord) []broker.Record {
	out := make([]broker.Record, len(in))
	for i, rec := range in {
		out[i] = broker.Record{Partition: broker.AnyPartition, Key: rec.Key.bytes(), Value: rec.Value.bytes()}
		if rec.Partition != nil {
			out[i].Partition = *rec.Partition
		}
		keys := make([]string, 0, len(rec.Headers))
		for k := range rec.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out[i].Headers = append(out[i].Headers, batch.Header{Key: k, Value: rec.Headers[k].bytes()})
		}
	}
	return out
}

// idempotentProducerID is the producer id of an Idempotency-Key: 63 bits
// of its SHA-256, so never negative (a negative id is "not idempotent").
func idempotentProducerID(key string) int64 {
	sum := sha256.Sum256([]byte("logd-http-idempotency-key\x00" + key))
	return int64(binary.BigEndian.Uint64(sum[:8]) >> 1)
}

// answerProduce writes each record's partition and offset; when a
// partition failed, the status is its error's and the records it held
// carry the error (the others were written: retry with the same
// Idempotency-Key to write only what is missing).
func answerProduce(w http.ResponseWriter, writes []broker.RecordsAppend, n int) {
	ans := produceAnswer{Records: make([]producedJSON, n)}
	status := http.StatusOK
	for _, pw := range writes {
		if pw.Err != nil {
			st, body := errorStatus(pw.Err)
			if status == http.StatusOK {
				status, ans.Error, ans.Leader = st, body.Error, body.Leader
			}
			for _, i := range pw.Records {
				ans.Records[i] = producedJSON{Partition: pw.Partition, Error: body.Error}
			}
			continue
		}
		for j, i := range pw.Records {
			off := pw.Result.BaseOffset + int64(j)
			ans.Records[i] = producedJSON{Partition: pw.Partition, Offset: &off, Duplicate: pw.Result.Duplicate}
		}
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, ans)
}

// jsonContentType returns why a body's Content-Type is not JSON, or "". A
// page of another site can make a browser send a text/plain, form or
// multipart body without asking the server first (no CORS preflight);
// any other type needs the preflight, which this port never grants.
// Accepted: application/json and application/*+json, with charset utf-8
// or none.
func jsonContentType(ct string) string {
	const fix = "send Content-Type: application/json (curl: -H 'Content-Type: application/json', or --json)"
	if ct == "" {
		return "no Content-Type: the body is JSON; " + fix
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Sprintf("Content-Type %q does not parse (%v): %s", ct, err, fix)
	}
	if mt != "application/json" && !(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return fmt.Sprintf("Content-Type %q: the body must be JSON: %s", ct, fix)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Sprintf("Content-Type %q: JSON is read as UTF-8 only: send charset=utf-8 or none", ct)
	}
	return ""
}

func parseAcks(s string) (broker.Acks, bool) {
	switch s {
	case "", "all":
		return broker.AcksAll, true
	case "leader":
		return broker.AcksLeader, true
	}
	return 0, false
}
