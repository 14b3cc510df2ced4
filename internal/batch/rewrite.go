package batch

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Rewrite appends the batch info describes, holding only recs, a subset
// of its records in offset order (each with its own Offset), as Kafka's
// cleaner leaves a compacted batch: with the base offset, last offset
// delta (so the batch still owns all its offsets and the next batch's
// offset follows), leader epoch, producer id, epoch and first sequence (so
// an idempotent producer's state read from it is the same) and
// attributes (compression codec included) of the original; each record
// keeps its offset delta and its timestamp; the first and max timestamps
// are the kept records' (the original's max for a batch left empty, which
// still owns its offsets); the CRC is computed. It fails only when the
// codec's encoder does.
func Rewrite(dst []byte, info Info, recs []Record) ([]byte, error) {
	codec := info.Attributes & AttrCompressionMask
	rb := kmsg.RecordBatch{
		FirstOffset:          info.BaseOffset,
		PartitionLeaderEpoch: info.LeaderEpoch,
		Magic:                Magic,
		Attributes:           info.Attributes &^ AttrCompressionMask,
		LastOffsetDelta:      info.LastOffsetDelta,
		FirstTimestamp:       info.MaxTimestamp,
		MaxTimestamp:         info.MaxTimestamp,
		ProducerID:           info.ProducerID,
		ProducerEpoch:        info.ProducerEpoch,
		FirstSequence:        info.FirstSequence,
	}
	start := len(dst)
	dst = encode(dst, rb, recs, true)
	if codec == CodecNone || len(recs) == 0 {
		return dst, nil
	}
	payload, err := compress(codec, dst[start+HeaderSize:])
	if err != nil {
		return dst[:start], fmt.Errorf("batch: rewrite: %s: %w", codecName(codec), err)
	}
	dst = append(dst[:start+HeaderSize], payload...)
	b := dst[start:]
	binary.BigEndian.PutUint16(b[crcStart:], uint16(info.Attributes))
	binary.BigEndian.PutUint32(b[lengthOffset:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[crcOffset:], Checksum(b))
	return dst, nil
}

// compress encodes src with codec as Kafka's clients do (snappy: one raw
// block, which every client reads).
func compress(codec int16, src []byte) ([]byte, error) {
	var buf bytes.Buffer
	switch codec {
	case CodecGzip:
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	case CodecSnappy:
		return s2.EncodeSnappy(nil, src), nil
	case CodecLz4:
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	case CodecZstd:
		w, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer w.Close()
		return w.EncodeAll(src, nil), nil
	default:
		return nil, fmt.Errorf("%w: compression codec %d", ErrUnsupported, codec)
	}
	return buf.Bytes(), nil
}
