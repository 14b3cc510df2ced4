package batch

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

// rawRecord is a record's fields as they go on the wire, so a test can
// write what Encode never would.
type rawRecord struct {
	tsDelta  int64
	offDelta int64
	key      []byte
	keyLen   int64 // used when key is nil: -1 for null, or a lie
	value    []byte
	valueLen int64
	headers  [][2][]byte
	trailing []byte
}

func (r rawRecord) body() []byte {
	b := []byte{0}
	b = binary.AppendVarint(b, r.tsDelta)
	b = binary.AppendVarint(b, r.offDelta)
	field := func(v []byte, n int64) {
		if v == nil {
			b = binary.AppendVarint(b, n)
			return
		}
		b = binary.AppendVarint(b, int64(len(v)))
		b = append(b, v...)
	}
	field(r.key, r.keyLen)
	field(r.value, r.valueLen)
	b = binary.AppendVarint(b, int64(len(r.headers)))
	for _, h := range r.headers {
		field(h[0], -1)
		field(h[1], -1)
	}
	return append(b, r.trailing...)
}

// rawBatch frames record bodies as one batch of a good header (changed by
// edit), with a right CRC: only Validate can refuse it.
func rawBatch(edit func(b []byte), bodies ...[]byte) []byte {
	b := Encode(nil, 0, NoProducer, []Record{{Timestamp: 1000}})[:HeaderSize]
	for _, body := range bodies {
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	binary.BigEndian.PutUint32(b[57:], uint32(len(bodies)))
	binary.BigEndian.PutUint32(b[23:], uint32(len(bodies)-1))
	binary.BigEndian.PutUint64(b[35:], 2000) // max timestamp
	if edit != nil {
		edit(b)
	}
	binary.BigEndian.PutUint32(b[lengthOffset:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[crcOffset:], Checksum(b))
	return b
}

func attrs(a uint16) func([]byte) {
	return func(b []byte) { binary.BigEndian.PutUint16(b[21:], a) }
}

// issueBatch is the batch of issue 17: one record whose value length says
// 10^9 bytes, CRC recomputed (base64, as grpcurl sends it).
const issueBatch = "AAAAAAAAAAAAAAA9AAAAAAKe4XrZAAAAAAAAAAABi8/laAAAAAGLz+VoAP//////////////////AAAAARYAAAACa4Co1rkHAA=="

func fromBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// TestValidateRefusesMalformedBatches: batches with a right CRC whose
// records or attributes logd cannot store are refused, each with an error
// naming what is wrong.
func TestValidateRefusesMalformedBatches(t *testing.T) {
	good := rawRecord{key: []byte("k"), value: []byte("v"), headers: [][2][]byte{{[]byte("h"), []byte("x")}}}
	with := func(f func(r *rawRecord)) []byte {
		r := good
		f(&r)
		return r.body()
	}
	noHeaders := with(func(r *rawRecord) { r.headers = nil }) // ends with header count 0
	long := append(bytes.Repeat([]byte{0x80}, 5), 0)          // a 6-byte varint
	cases := []struct {
		name string
		b    []byte
		want error
		msg  string
	}{
		{"issue 17: value length 10^9", fromBase64(issueBatch), ErrCorrupt, "value length"},
		{"key length -5", rawBatch(nil, with(func(r *rawRecord) { r.key, r.keyLen = nil, -5 })), ErrCorrupt, "key length"},
		{"key length past the record", rawBatch(nil, with(func(r *rawRecord) { r.key, r.keyLen = nil, 100 })), ErrCorrupt, "key length"},
		{"value length -2", rawBatch(nil, with(func(r *rawRecord) { r.value, r.valueLen = nil, -2 })), ErrCorrupt, "value length"},
		{"null header key", rawBatch(nil, append(bytes.Clone(noHeaders[:len(noHeaders)-1]), 2, 1, 2, 'x')), ErrCorrupt, "header 0: key"},
		{"header key not UTF-8", rawBatch(nil, with(func(r *rawRecord) { r.headers = [][2][]byte{{{0xff, 0xfe}, []byte("x")}} })), ErrCorrupt, "UTF-8"},
		{"header count past the record", rawBatch(nil, append(bytes.Clone(noHeaders[:len(noHeaders)-1]), 0x7e)), ErrCorrupt, "header count"},
		{"bytes after the last field", rawBatch(nil, with(func(r *rawRecord) { r.trailing = []byte{0} })), ErrCorrupt, "after its last field"},
		{"offset delta 1 for record 0", rawBatch(nil, with(func(r *rawRecord) { r.offDelta = 1 })), ErrCorrupt, "offset delta"},
		{"6-byte offset delta varint", rawBatch(nil, append(append([]byte{0, 0}, long...), 0)), ErrCorrupt, "offset delta"},
		{"timestamp after the max", rawBatch(nil, with(func(r *rawRecord) { r.tsDelta = 5000 })), ErrCorrupt, "max timestamp"},
		{"timestamp overflow", rawBatch(func(b []byte) { binary.BigEndian.PutUint64(b[27:], math.MaxInt64-1) }, with(func(r *rawRecord) { r.tsDelta = 10 })), ErrCorrupt, "overflows"},
		{"fewer records than the count", rawBatch(func(b []byte) {
			binary.BigEndian.PutUint32(b[57:], 2)
			binary.BigEndian.PutUint32(b[23:], 1)
		}, good.body()), ErrCorrupt, "record 1 of 2"},
		{"bytes after the last record", rawBatch(func(b []byte) {
			binary.BigEndian.PutUint32(b[57:], 1)
			binary.BigEndian.PutUint32(b[23:], 0)
		}, good.body(), good.body()), ErrCorrupt, "after the last of 1"},
		{"record length 0", rawBatch(nil, []byte{}), ErrCorrupt, "length"},
		{"transactional without a producer id", rawBatch(attrs(attrTransactional), good.body()), ErrCorrupt, "transactional batch without a producer id"},
		{"control", rawBatch(attrs(AttrControl), good.body()), ErrUnsupported, "control"},
		{"gzip attribute, records not gzip", rawBatch(attrs(CodecGzip), good.body()), ErrCorrupt, "gzip"},
		{"zstd attribute, records not zstd", rawBatch(attrs(CodecZstd), good.body()), ErrCorrupt, "zstd"},
		{"compression codec 5", rawBatch(attrs(5), good.body()), ErrUnsupported, "codec 5"},
		{"log append time", rawBatch(attrs(attrLogAppendTime), good.body()), ErrUnsupported, "log-append-time"},
		{"unknown attribute bit", rawBatch(attrs(0x100), good.body()), ErrUnsupported, "0x100"},
		{"idempotent with sequence -1", rawBatch(func(b []byte) { binary.BigEndian.PutUint64(b[43:], 5) }, good.body()), ErrCorrupt, "sequence"},
		{"no record", Encode(nil, 0, NoProducer, nil), ErrCorrupt, "no record"},
		{"two batches", append(rawBatch(nil, good.body()), rawBatch(nil, good.body())...), ErrCorrupt, "exactly one"},
	}
	if _, err := Validate(rawBatch(nil, good.body(), with(func(r *rawRecord) { r.offDelta, r.key, r.keyLen, r.value, r.valueLen = 1, nil, -1, nil, -1 }))); err != nil {
		t.Fatalf("a good raw batch: %v", err)
	}
	for _, c := range cases {
		if _, err := Verify(c.b); err != nil && c.name != "two batches" {
			t.Fatalf("%s: the test batch must pass the CRC check: %v", c.name, err)
		}
		_, err := Validate(c.b)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: Validate = %v, want %v mentioning %q", c.name, err, c.want, c.msg)
		}
	}
}

// TestValidateAcceptsWhatEncodes: every batch Encode writes is valid,
// including nil and empty keys, values and header values.
func TestValidateAcceptsWhatEncodes(t *testing.T) {
	recs := append(sample(), Record{Timestamp: 1000, Key: []byte{}, Value: nil,
		Headers: []Header{{Key: "", Value: nil}, {Key: "é", Value: []byte{}}}})
	for _, p := range []Producer{NoProducer, {ID: 3, Epoch: 0, Sequence: 0}} {
		if _, err := Validate(Encode(nil, 0, p, recs)); err != nil {
			t.Fatalf("producer %+v: %v", p, err)
		}
	}
}

// FuzzValidate frames fuzzed record bytes as a batch with a right CRC, so
// they reach the record checks: what Validate accepts must decode, every
// record of it.
func FuzzValidate(f *testing.F) {
	f.Add(rawRecord{key: []byte("k"), value: []byte("v"), headers: [][2][]byte{{[]byte("h"), nil}}}.body(), uint8(1))
	f.Add(fromBase64(issueBatch)[HeaderSize:], uint8(1))
	f.Fuzz(func(t *testing.T, records []byte, n uint8) {
		b := rawBatch(func(b []byte) {
			binary.BigEndian.PutUint32(b[57:], uint32(n))
			binary.BigEndian.PutUint32(b[23:], uint32(int32(n)-1))
		})
		b = append(b, records...)
		binary.BigEndian.PutUint32(b[lengthOffset:], uint32(len(b)-12))
		binary.BigEndian.PutUint32(b[crcOffset:], Checksum(b))
		if _, err := Validate(b); err != nil {
			return
		}
		_, recs, err := Decode(b, 0)
		if err != nil || len(recs) != int(n) {
			t.Fatalf("Validate accepts %d records that decode to %d, %v", n, len(recs), err)
		}
	})
}

// A transaction marker encodes as Kafka's control batch and reads back;
// producers may send transactional batches (with a producer id), never
// markers.
func TestControlBatch(t *testing.T) {
	for _, commit := range []bool{true, false} {
		b := EncodeControl(nil, Producer{ID: 7, Epoch: 3}, commit, 0, 1000)
		c, err := CheckFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		info := c.Info()
		if !info.IsControl() || !info.IsTransactional() || info.ProducerID != 7 || info.ProducerEpoch != 3 || info.FirstSequence != -1 {
			t.Fatalf("marker header %+v", info)
		}
		if c, err := CheckControl(b); err != nil || !c.Validated() {
			t.Fatalf("CheckControl: %v", err)
		}
		got, err := ControlCommit(b)
		if err != nil || got != commit {
			t.Fatalf("ControlCommit = %v, %v, want %v", got, err, commit)
		}
		if _, err := Validate(b); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("a produced marker: %v, want ErrUnsupported", err)
		}
	}
	tx := Encode(nil, 0, Producer{ID: 7, Epoch: 3, Sequence: 0}, []Record{{Value: []byte("v")}})
	binary.BigEndian.PutUint16(tx[attrOffset:], AttrTransactional)
	binary.BigEndian.PutUint32(tx[crcOffset:], Checksum(tx))
	if c, err := Validate(tx); err != nil || !c.Info().IsTransactional() {
		t.Fatalf("transactional batch: %v", err)
	}
	if _, err := CheckControl(tx); err == nil {
		t.Fatal("a data batch checked as a marker")
	}
	if _, err := ControlCommit(tx); err == nil {
		t.Fatal("a data batch read as a marker")
	}
}
