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
	"unicode/utf16"
	"unicode/utf8"

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
// errBadBody (wrapped with what to fix) on any malformed input, including
// text that is not UTF-8 (checkText), never panics, and passes on r's own
// error (a *http.MaxBytesError) as it is.
func decodeProduceBody(r io.Reader) (produceBody, error) {
	var b produceBody
	data, err := io.ReadAll(r)
	if err != nil {
		if isMaxBytes(err) {
			return b, err
		}
		return b, fmt.Errorf("%w: reading the body: %v", errBadBody, err)
	}
	if err := checkText(data); err != nil {
		return b, err
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&b); err != nil {
		return b, fmt.Errorf("%w: %v; want {\"records\": [{\"key\": ..., \"value\": ..., \"headers\": {...}, \"partition\": N}]}", errBadBody, err)
	}
	if _, err := d.Token(); err != io.EOF {
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

// checkText refuses a body that is not UTF-8, or that escapes a lone UTF-16
// surrogate ("\ud800" without its pair): encoding/json would decode
// either to U+FFFD and the record would hold other bytes than were sent.
// JSON text is UTF-8 (RFC 8259); bytes that are not text go as
// {"base64": "..."}.
func checkText(b []byte) error {
	const fix = `: JSON text must be UTF-8; send bytes that are not text as {"base64": "..."}`
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Errorf("%w: byte %d (0x%02x) is not UTF-8%s", errBadBody, i, b[i], fix)
		}
		i += size
	}
	// A backslash occurs in valid JSON only inside a string, as an escape.
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] != 'u' {
			i++ // the escaped character
			continue
		}
		r, ok := hex4(b[i+2:])
		if !ok || !utf16.IsSurrogate(r) {
			i++ // the decoder refuses a bad escape itself
			continue
		}
		if r < 0xdc00 && len(b) >= i+12 && b[i+6] == '\\' && b[i+7] == 'u' {
			if low, ok := hex4(b[i+8:]); ok && low >= 0xdc00 && low <= 0xdfff {
				i += 11 // a valid pair
				continue
			}
		}
		return fmt.Errorf("%w: byte %d: %s is half of a UTF-16 surrogate pair, not a character%s", errBadBody, i, b[i:i+6], fix)
	}
	return nil
}

// hex4 parses the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
