package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression codecs, the attributes' low three bits.
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLz4    = 3
	CodecZstd   = 4
)

// Bounds on a compressed batch's records once decompressed: at most
// MaxExpansion times the compressed bytes, but never less than
// minDecompressedLimit (small batches of repetitive records compress far
// better than 64x) and never more than MaxDecompressedBytes. A batch that
// expands further is refused before it takes more memory than that.
const (
	MaxExpansion         = 64
	MaxDecompressedBytes = 256 << 20
	minDecompressedLimit = 4 << 20
)

// decompressedLimit is the most bytes the records compressed into n bytes
// may decompress to.
func decompressedLimit(n int) int {
	return min(MaxDecompressedBytes, max(minDecompressedLimit, MaxExpansion*n))
}

// codecName names a codec in errors.
func codecName(codec int16) string {
	switch codec {
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLz4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec %d", codec)
}

// records returns the batch's record bytes: b after the header as stored,
// or decompressed into a new buffer when the attributes name a codec.
// Errors wrap ErrUnsupported (a codec Kafka does not define) or ErrCorrupt
// (a payload that does not decompress, or expands past the limit).
func records(b []byte, info Info) ([]byte, error) {
	payload := b[HeaderSize:info.Size()]
	codec := info.Attributes & AttrCompressionMask
	if codec == CodecNone {
		return payload, nil
	}
	out, err := decompress(codec, payload, decompressedLimit(len(payload)))
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s records: %v", ErrCorrupt, codecName(codec), err)
	}
	return out, nil
}

// errTooLarge is the cause of a payload that expands past its limit.
type errTooLarge int

func (e errTooLarge) Error() string {
	return fmt.Sprintf("decompress to more than %d bytes (a batch may expand %dx, to at most %d bytes)",
		int(e), MaxExpansion, MaxDecompressedBytes)
}

// decompress decodes src with codec, failing once the output would pass
// limit bytes.
func decompress(codec int16, src []byte, limit int) ([]byte, error) {
	switch codec {
	case CodecGzip:
		zr, _ := gzipPool.Get().(*gzip.Reader)
		defer gzipPool.Put(zr)
		if err := zr.Reset(bytes.NewReader(src)); err != nil {
			return nil, err
		}
		return readBounded(zr, limit)
	case CodecSnappy:
		return decodeSnappy(src, limit)
	case CodecLz4:
		lr, _ := lz4Pool.Get().(*lz4.Reader)
		defer lz4Pool.Put(lr)
		lr.Reset(bytes.NewReader(src))
		return readBounded(lr, limit)
	case CodecZstd:
		zd, _ := zstdPool.Get().(*zstd.Decoder)
		if zd == nil {
			return nil, errors.New("zstd decoder unavailable")
		}
		defer zstdPool.Put(zd)
		if err := zd.Reset(bytes.NewReader(src)); err != nil {
			return nil, err
		}
		out, err := readBounded(zd, limit)
		_ = zd.Reset(nil) // drop the reference to src
		return out, err
	}
	return nil, fmt.Errorf("%w: compression codec %d: Kafka defines 1 (gzip) to 4 (zstd)", ErrUnsupported, codec)
}

// Readers are pooled: each holds tables or windows worth reusing. None of
// them runs goroutines (zstd with concurrency 1 decodes synchronously), so
// the pool may drop them without a Close.
var (
	gzipPool = sync.Pool{New: func() any { return new(gzip.Reader) }}
	lz4Pool  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdPool = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(MaxDecompressedBytes))
		if err != nil {
			return nil
		}
		return d
	}}
)

// readBounded reads r to its end, failing once it yields more than limit
// bytes.
func readBounded(r io.Reader, limit int) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(limit) {
		return nil, errTooLarge(limit)
	}
	return buf.Bytes(), nil
}

// xerialMagic starts Kafka's framed snappy (the xerial snappy-java stream):
// the magic, a 4-byte version and a 4-byte compatible version, then blocks,
// each a 4-byte big-endian length and a raw snappy block. Without the
// magic, the payload is one raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

func decodeSnappy(src []byte, limit int) ([]byte, error) {
	if len(src) < xerialHeaderSize || !bytes.HasPrefix(src, xerialMagic) {
		return decodeSnappyBlock(nil, src, limit)
	}
	var out []byte
	rest := src[xerialHeaderSize:]
	for len(rest) > 0 {
		if len(rest) < 4 {
			return nil, errors.New("xerial snappy: truncated block length")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, fmt.Errorf("xerial snappy: block of %d bytes runs past the payload's end", n)
		}
		var err error
		if out, err = decodeSnappyBlock(out, rest[:n], limit); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

// decodeSnappyBlock appends the decoded raw snappy block src to dst, failing
// before it allocates when dst would grow past limit bytes.
func decodeSnappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	start := len(dst)
	if n > limit-start {
		return nil, errTooLarge(limit)
	}
	if cap(dst)-start < n {
		grown := make([]byte, start, start+n)
		copy(grown, dst)
		dst = grown
	}
	out, err := s2.Decode(dst[start:start+n], src)
	if err != nil {
		return nil, err
	}
	return dst[:start+len(out)], nil
}
