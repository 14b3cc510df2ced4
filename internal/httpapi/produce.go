package httpapi

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/routing"
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

// partitionWrite is one partition's share of a produce request.
type partitionWrite struct {
	partition int32
	indexes   []int // the request's records in this batch, in order
	batch     []byte
	res       broker.ProduceResult
	err       error
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
	p := h.principal(r)
	info, err := h.core.TopicLayout(r.Context(), p, topic)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	writes, err := h.route(body.Records, int32(len(info.Partitions)), idem)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	encode(writes, body.Records, idem)
	var wg sync.WaitGroup
	for _, pw := range writes {
		wg.Go(func() {
			pw.res, pw.err = h.core.Produce(r.Context(), broker.ProduceRequest{
				Principal: p, Topic: topic, Partition: pw.partition, Batch: pw.batch, Acks: acks})
		})
	}
	wg.Wait()
	answerProduce(w, writes, len(body.Records))
}

// route assigns each record its partition: the one it names, else its
// key's (routing.ForKey), else one partition for the request's unkeyed
// records, chosen from the idempotency key (so a retry goes the same way)
// or round-robin. It checks every named partition before anything is
// written.
func (h *Handler) route(recs []produceRecord, n int32, idem string) ([]*partitionWrite, error) {
	if n <= 0 {
		return nil, broker.ErrUnknownPartition
	}
	var sticky int32
	if idem != "" {
		sticky = int32(idempotentProducerID(idem) % int64(n))
	} else {
		sticky = int32(h.rr.Add(1) % uint32(n))
	}
	byPartition := map[int32]*partitionWrite{}
	for i, rec := range recs {
		var part int32
		switch {
		case rec.Partition != nil:
			if *rec.Partition >= n {
				return nil, partitionError(i, *rec.Partition, n)
			}
			part = *rec.Partition
		case rec.Key.set:
			part = routing.ForKey(rec.Key.bytes(), int(n))
		default:
			part = sticky
		}
		pw := byPartition[part]
		if pw == nil {
			pw = &partitionWrite{partition: part}
			byPartition[part] = pw
		}
		pw.indexes = append(pw.indexes, i)
	}
	writes := make([]*partitionWrite, 0, len(byPartition))
	for _, pw := range byPartition {
		writes = append(writes, pw)
	}
	slices.SortFunc(writes, func(a, b *partitionWrite) int { return int(a.partition - b.partition) })
	return writes, nil
}

func partitionError(i int, p, n int32) error {
	return fmt.Errorf("record %d: partition %d does not exist, the topic has %d (0 to %d): %w", i, p, n, n-1, broker.ErrUnknownPartition)
}

// encode builds each partition's batch. With an idempotency key the batch
// is the first (sequence 0, epoch 0) of the key's producer id.
func encode(writes []*partitionWrite, recs []produceRecord, idem string) {
	prod := batch.NoProducer
	if idem != "" {
		prod = batch.Producer{ID: idempotentProducerID(idem), Epoch: 0, Sequence: 0}
	}
	now := time.Now().UnixMilli()
	for _, pw := range writes {
		brs := make([]batch.Record, 0, len(pw.indexes))
		for _, i := range pw.indexes {
			rec := recs[i]
			br := batch.Record{Timestamp: now, Key: rec.Key.bytes(), Value: rec.Value.bytes()}
			keys := make([]string, 0, len(rec.Headers))
			for k := range rec.Headers {
				keys = append(keys, k)
			}
			slices.Sort(keys) // a retry encodes the same bytes
			for _, k := range keys {
				br.Headers = append(br.Headers, batch.Header{Key: k, Value: rec.Headers[k].bytes()})
			}
			brs = append(brs, br)
		}
		pw.batch = batch.Encode(nil, 0, prod, brs)
	}
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
func answerProduce(w http.ResponseWriter, writes []*partitionWrite, n int) {
	ans := produceAnswer{Records: make([]producedJSON, n)}
	status := http.StatusOK
	for _, pw := range writes {
		if pw.err != nil {
			st, body := errorStatus(pw.err)
			if status == http.StatusOK {
				status, ans.Error, ans.Leader = st, body.Error, body.Leader
			}
			for _, i := range pw.indexes {
				ans.Records[i] = producedJSON{Partition: pw.partition, Error: body.Error}
			}
			continue
		}
		for j, i := range pw.indexes {
			off := pw.res.BaseOffset + int64(j)
			ans.Records[i] = producedJSON{Partition: pw.partition, Offset: &off, Duplicate: pw.res.Duplicate}
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
