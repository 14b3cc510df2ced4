package batch

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// Batch attribute bits besides the compression codec.
const (
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	// attrKnown covers every bit Kafka defines up to the delete horizon
	// flag (0x40); bits above are unassigned.
	attrKnown = 0x7f
)

// Checked is a batch that passed CheckFrame or Validate: exactly one whole
// batch, header well-formed, CRC-32C right, at least one record, and, from
// Validate, every record well-formed too. Its fields are unexported, so a
// Checked is the proof that its bytes were checked: the layers a batch goes
// through after the check (partition, replication, log) take a Checked and
// do not check it again, so that a node computes a batch's CRC once. The
// zero Checked holds no batch; every layer refuses it.
//
// A Checked shares its bytes with the slice it was made from: the log
// rewrites the base offset and leader epoch in place (outside the CRC),
// and nothing else may change them.
type Checked struct {
	b     []byte
	info  Info
	valid bool // by Validate: the records were walked too
}

// Bytes is the batch.
func (c Checked) Bytes() []byte { return c.b }

// Info is the batch's header as checked (its base offset and leader epoch
// as they were then).
func (c Checked) Info() Info { return c.info }

// Validated reports whether the records were checked too (Validate), not
// only the frame (CheckFrame).
func (c Checked) Validated() bool { return c.valid }

// CheckFrame checks that b is exactly one whole batch whose header is
// well-formed, whose CRC-32C is right and which holds at least one record.
// It is the structural part of Validate, one pass over the bytes for the
// CRC: where the records were validated elsewhere (a follower's copy of a
// batch the leader validated) the frame is what the bytes received must
// prove.
func CheckFrame(b []byte) (Checked, error) {
	info, err := Verify(b)
	if err != nil {
		return Checked{}, err
	}
	if info.Size() != len(b) {
		return Checked{}, fmt.Errorf("%w: %d bytes after the batch: send exactly one batch", ErrCorrupt, len(b)-info.Size())
	}
	if info.NumRecords == 0 {
		return Checked{}, fmt.Errorf("%w: no record: a batch needs at least one", ErrCorrupt)
	}
	if info.LastOffsetDelta != info.NumRecords-1 {
		// Only the cleaner leaves gaps in a batch (Rewrite); a batch
		// stored through produce or replication owns one offset a record.
		return Checked{}, fmt.Errorf("%w: %d records but last offset delta %d", ErrCorrupt, info.NumRecords, info.LastOffsetDelta)
	}
	return Checked{b: b, info: info}, nil
}

// Validate is logd's one answer to "may this batch be stored": CheckFrame,
// then the attributes logd supports, the producer fields, and every record
// walked once, like Kafka's LogValidator. A compressed batch (gzip, snappy,
// lz4, zstd) is decompressed once, within the bound of decompressedLimit,
// and its records checked the same way; the batch itself is stored as sent.
// A batch it accepts decodes (Decode returns its NumRecords records), so a
// reader never meets a bad record that came in through produce. It fails
// with ErrUnsupported for a well-formed batch logd does not store (unknown
// codec, control (only a broker writes markers), log-append-time) and ErrCorrupt for
// anything malformed, naming the record and the field. It allocates nothing
// for an uncompressed batch. It computes the CRC once (CheckFrame).
func Validate(b []byte) (Checked, error) {
	c, err := CheckFrame(b)
	if err != nil {
		return Checked{}, err
	}
	if err := validateRecords(b, c.info); err != nil {
		return Checked{}, err
	}
	c.valid = true
	return c, nil
}

// validateRecords is Validate after the frame: attributes, producer
// fields, records.
func validateRecords(b []byte, info Info) error {
	if err := checkAttributes(info.Attributes); err != nil {
		return err
	}
	if info.IsTransactional() && info.ProducerID < 0 {
		return fmt.Errorf("%w: transactional batch without a producer id", ErrCorrupt)
	}
	if info.ProducerID >= 0 && (info.ProducerEpoch < 0 || info.FirstSequence < 0) {
		return fmt.Errorf("%w: producer id %d with epoch %d and first sequence %d: an idempotent batch needs both >= 0",
			ErrCorrupt, info.ProducerID, info.ProducerEpoch, info.FirstSequence)
	}
	rest, err := records(b, info)
	if err != nil {
		return err
	}
	for i := int32(0); i < info.NumRecords; i++ {
		n, k := binary.Varint(rest)
		if k <= 0 || k > binary.MaxVarintLen32 || n <= 0 || n > int64(len(rest)-k) {
			return fmt.Errorf("%w: record %d of %d: length runs past the batch's end", ErrCorrupt, i, info.NumRecords)
		}
		if err := checkRecord(rest[k:k+int(n)], i, info); err != nil {
			return err
		}
		rest = rest[k+int(n):]
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorrupt, len(rest), info.NumRecords)
	}
	return nil
}

func checkAttributes(attrs int16) error {
	switch {
	case attrs&AttrCompressionMask > CodecZstd:
		return fmt.Errorf("%w: compression codec %d: Kafka defines 1 (gzip) to 4 (zstd)",
			ErrUnsupported, attrs&AttrCompressionMask)
	case attrs&AttrControl != 0:
		return fmt.Errorf("%w: control batch: only a broker writes transaction markers", ErrUnsupported)
	case attrs&attrLogAppendTime != 0:
		return fmt.Errorf("%w: log-append-time batch: the broker sets that timestamp type, a producer sends create time", ErrUnsupported)
	case attrs&^attrKnown != 0:
		return fmt.Errorf("%w: attribute bits %#x that Kafka does not define", ErrUnsupported, uint16(attrs)&^attrKnown)
	}
	return nil
}

// recordError names record i of a batch in an ErrCorrupt error.
func recordError(i int32, info Info, format string, args ...any) error {
	return fmt.Errorf("%w: record %d of %d: %s", ErrCorrupt, i, info.NumRecords, fmt.Sprintf(format, args...))
}

// checkRecord checks record i's body (after its length prefix): every field
// in bounds, its offset delta its position, its timestamp within the
// batch's, and nothing after its last header.
func checkRecord(rec []byte, i int32, info Info) error {
	rec = rec[1:] // attributes: unused in v2 records
	tsDelta, rec, ok := varlong(rec)
	if !ok {
		return recordError(i, info, "bad timestamp delta")
	}
	ts := info.FirstTimestamp + tsDelta
	if (tsDelta > 0 && ts < info.FirstTimestamp) || (tsDelta < 0 && ts > info.FirstTimestamp) {
		return recordError(i, info, "timestamp delta %d overflows the first timestamp %d", tsDelta, info.FirstTimestamp)
	}
	if ts > info.MaxTimestamp {
		// The time index trusts the max timestamp: seeking by time would
		// skip this record.
		return recordError(i, info, "timestamp %d is after the batch's max timestamp %d", ts, info.MaxTimestamp)
	}
	od, rec, ok := varint(rec)
	if !ok || od != i {
		return recordError(i, info, "offset delta must be %d", i)
	}
	if _, rec, ok = bytesField(rec, true); !ok {
		return recordError(i, info, "key length must be -1 (no key) or fit in the record")
	}
	if _, rec, ok = bytesField(rec, true); !ok {
		return recordError(i, info, "value length must be -1 (no value) or fit in the record")
	}
	n, rec, ok := varint(rec)
	if !ok || n < 0 || int(n) > len(rec)/2 { // a header takes 2 bytes at least
		return recordError(i, info, "header count must be >= 0 and fit in the record")
	}
	for h := range n {
		var key []byte
		if key, rec, ok = bytesField(rec, false); !ok {
			return recordError(i, info, "header %d: key length must be >= 0 and fit in the record", h)
		}
		// A header key is a string (Kafka's, and the API's proto string):
		// refused here, it can never make a decoded read fail.
		if !utf8.Valid(key) {
			return recordError(i, info, "header %d: key is not valid UTF-8", h)
		}
		if _, rec, ok = bytesField(rec, true); !ok {
			return recordError(i, info, "header %d: value length must be -1 (no value) or fit in the record", h)
		}
	}
	if len(rec) != 0 {
		return recordError(i, info, "%d bytes after its last field", len(rec))
	}
	return nil
}

// varint reads a zigzag varint that fits an int32 (at most 5 bytes), the
// encoding of a record's int32 fields.
func varint(b []byte) (int32, []byte, bool) {
	v, n := binary.Varint(b)
	if n <= 0 || n > binary.MaxVarintLen32 || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, nil, false
	}
	return int32(v), b[n:], true
}

// varlong reads a zigzag varint of up to 10 bytes.
func varlong(b []byte) (int64, []byte, bool) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}

// bytesField reads a varint-length-prefixed field; length -1 (null) is
// allowed when nullable.
func bytesField(b []byte, nullable bool) (field, rest []byte, ok bool) {
	n, rest, ok := varint(b)
	switch {
	case !ok, n < -1, n == -1 && !nullable, int(n) > len(rest):
		return nil, nil, false
	case n == -1:
		return nil, rest, true
	}
	return rest[:n], rest[n:], true
}
