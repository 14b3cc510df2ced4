package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/recordtext"
)

// recordJSON is a record in an answer or an SSE event: the object `logd
// consume --json` prints.
type recordJSON struct {
	Topic         string            `json:"topic"`
	Partition     int32             `json:"partition"`
	Offset        int64             `json:"offset"`
	Key           *string           `json:"key"`
	KeyEncoding   string            `json:"key_encoding,omitempty"`
	Value         *string           `json:"value"`
	ValueEncoding string            `json:"value_encoding,omitempty"`
	Timestamp     string            `json:"timestamp"`
	Headers       map[string]string `json:"headers,omitempty"`
}

func toRecordJSON(topic string, p int32, r batch.Record) recordJSON {
	j := recordJSON{Topic: topic, Partition: p, Offset: r.Offset,
		Timestamp: time.UnixMilli(r.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	if r.Key != nil {
		k, enc := recordtext.TextOrBase64(r.Key)
		j.Key, j.KeyEncoding = &k, enc
	}
	if r.Value != nil {
		v, enc := recordtext.TextOrBase64(r.Value)
		j.Value, j.ValueEncoding = &v, enc
	}
	if len(r.Headers) > 0 {
		j.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			j.Headers[h.Key] = string(h.Value)
		}
	}
	return j
}

// produceBody is POST /v1/topics/{topic}/records's body.
type produceBody struct {
	Records []produceRecord `json:"records"`
}

type produceRecord struct {
	Key       bytesField            `json:"key"`
	Value     bytesField            `json:"value"`
	Headers   map[string]bytesField `json:"headers"`
	Partition *int32                `json:"partition"`
}

// bytesField is a key, value or header value: a JSON string (its UTF-8
// bytes), {"base64": "..."}, or null (absent).
type bytesField struct {
	b   []byte
	set bool // not null
}

func (f *bytesField) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*f = bytesField{}
		return nil
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*f = bytesField{b: []byte(s), set: true}
		return nil
	case len(data) > 0 && data[0] == '{':
		var o struct {
			Base64 *string `json:"base64"`
		}
		d := json.NewDecoder(bytes.NewReader(data))
		d.DisallowUnknownFields()
		if err := d.Decode(&o); err != nil || o.Base64 == nil {
			return errors.New(`want a string or {"base64": "..."}`)
		}
		b, err := base64.StdEncoding.DecodeString(*o.Base64)
		if err != nil {
			return fmt.Errorf("base64: %v (standard encoding with padding)", err)
		}
		*f = bytesField{b: b, set: true}
		return nil
	}
	return errors.New(`want a string or {"base64": "..."}`)
}

// bytes is the field's value: nil when null or absent.
func (f bytesField) bytes() []byte {
	if !f.set {
		return nil
	}
	if f.b == nil {
		return []byte{}
	}
	return f.b
}

// maxRecordsPerRequest bounds a produce request's record count.
const maxRecordsPerRequest = 10000

// errBadBody marks a body that is not a valid produce request (400).
var errBadBody = errors.New("bad request body")

// decodeProduceBody reads and checks a produce request body. It fails with
// errBadBody (wrapped with what to fix) on any malformed input, never
// panics, and passes on r's own error (a *http.MaxBytesError) as it is.
func decodeProduceBody(r io.Reader) (produceBody, error) {
	d := json.NewDecoder(r)
	d.DisallowUnknownFields()
	var b produceBody
	if err := d.Decode(&b); err != nil {
		if isMaxBytes(err) {
			return b, err
		}
		return b, fmt.Errorf("%w: %v; want {\"records\": [{\"key\": ..., \"value\": ..., \"headers\": {...}, \"partition\": N}]}", errBadBody, err)
	}
	if _, err := d.Token(); err != io.EOF {
		if isMaxBytes(err) {
			return b, err
		}
		return b, fmt.Errorf("%w: data after the JSON object: send one object", errBadBody)
	}
	if len(b.Records) == 0 {
		return b, fmt.Errorf("%w: no records: send {\"records\": [{\"value\": \"...\"}]}", errBadBody)
	}
	if len(b.Records) > maxRecordsPerRequest {
		return b, fmt.Errorf("%w: %d records: send at most %d per request", errBadBody, len(b.Records), maxRecordsPerRequest)
	}
	for i, rec := range b.Records {
		if rec.Partition != nil && *rec.Partition < 0 {
			return b, fmt.Errorf("%w: record %d: partition %d is negative", errBadBody, i, *rec.Partition)
		}
		for k, v := range rec.Headers {
			if !v.set {
				return b, fmt.Errorf("%w: record %d: header %q is null: give a string", errBadBody, i, k)
			}
		}
	}
	return b, nil
}

func isMaxBytes(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}
