package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoCodecs are franz-go's compressors, the ones a kgo producer uses.
var kgoCodecs = []struct {
	codec int16
	kgo   kgo.CompressionCodec
}{
	{CodecGzip, kgo.GzipCompression()},
	{CodecSnappy, kgo.SnappyCompression()},
	{CodecLz4, kgo.Lz4Compression()},
	{CodecZstd, kgo.ZstdCompression()},
}

// compressBatch turns an uncompressed batch into one whose records are
// compressed by compress and whose attributes name codec, CRC recomputed,
// as a Kafka producer writes it.
func compressBatch(t testing.TB, plain []byte, codec int16, compress func([]byte) []byte) []byte {
	t.Helper()
	b := append([]byte(nil), plain[:HeaderSize]...)
	b = append(b, compress(plain[HeaderSize:])...)
	binary.BigEndian.PutUint16(b[21:], uint16(codec))
	binary.BigEndian.PutUint32(b[lengthOffset:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[crcOffset:], Checksum(b))
	return b
}

func kgoCompress(t testing.TB, c kgo.CompressionCodec, codec int16) func([]byte) []byte {
	comp, err := kgo.DefaultCompressor(c)
	if err != nil {
		t.Fatal(err)
	}
	return func(src []byte) []byte {
		var buf bytes.Buffer
		out, got := comp.Compress(&buf, src)
		if int16(got) != codec {
			t.Fatalf("franz-go compressed with codec %d, want %d", got, codec)
		}
		return bytes.Clone(out)
	}
}

// xerialCompress writes Kafka's framed snappy (snappy-java's stream) in
// blocks of size bytes.
func xerialCompress(size int) func([]byte) []byte {
	return func(src []byte) []byte {
		out := append([]byte(nil), xerialMagic...)
		out = append(out, 0, 0, 0, 1, 0, 0, 0, 1)
		for len(src) > 0 {
			n := min(size, len(src))
			blk := s2.EncodeSnappy(nil, src[:n])
			out = binary.BigEndian.AppendUint32(out, uint32(len(blk)))
			out = append(out, blk...)
			src = src[n:]
		}
		return out
	}
}

// checkDecoded checks that b validates, keeps its bytes (it is stored as
// sent) and decodes to sample()'s records from offset 100.
func checkDecoded(t *testing.T, name string, b []byte) {
	t.Helper()
	sent := bytes.Clone(b)
	c, err := Validate(b)
	if err != nil {
		t.Fatalf("%s: Validate: %v", name, err)
	}
	info := c.Info()
	if !info.Compressed() || info.NumRecords != 3 {
		t.Fatalf("%s: info %+v", name, info)
	}
	_, recs, err := Decode(b, 101)
	if err != nil {
		t.Fatalf("%s: Decode: %v", name, err)
	}
	want := sample()[1:]
	if len(recs) != len(want) {
		t.Fatalf("%s: %d records from offset 101, want %d", name, len(recs), len(want))
	}
	for i, r := range recs {
		w := want[i]
		if r.Offset != int64(101+i) || r.Timestamp != w.Timestamp || !bytes.Equal(r.Key, w.Key) ||
			!bytes.Equal(r.Value, w.Value) || len(r.Headers) != len(w.Headers) {
			t.Fatalf("%s: record %d = %+v, want %+v", name, i, r, w)
		}
	}
	if !bytes.Equal(b, sent) {
		t.Fatalf("%s: Validate or Decode changed the batch", name)
	}
}

// TestCompressedBatches: batches compressed by franz-go's own compressor
// with each codec, and snappy in xerial framing, validate and decode.
func TestCompressedBatches(t *testing.T) {
	plain := Encode(nil, 100, NoProducer, sample())
	for _, c := range kgoCodecs {
		checkDecoded(t, codecName(c.codec), compressBatch(t, plain, c.codec, kgoCompress(t, c.kgo, c.codec)))
	}
	checkDecoded(t, "xerial snappy, one block", compressBatch(t, plain, CodecSnappy, xerialCompress(1<<15)))
	checkDecoded(t, "xerial snappy, 50-byte blocks", compressBatch(t, plain, CodecSnappy, xerialCompress(50)))
}

// TestCompressedBatchRefused: a compressed payload that is corrupt, or
// that decompresses to other records than the header counts, or that
// expands past the limit, is refused as corrupt.
func TestCompressedBatchRefused(t *testing.T) {
	plain := Encode(nil, 0, NoProducer, sample())
	two := Encode(nil, 0, NoProducer, sample()[:2])
	for _, c := range kgoCodecs {
		name := codecName(c.codec)
		comp := kgoCompress(t, c.kgo, c.codec)
		good := compressBatch(t, plain, c.codec, comp)
		// Flip bytes in the middle of the compressed payload.
		bad := bytes.Clone(good)
		for i := HeaderSize + (len(bad)-HeaderSize)/2; i < len(bad) && i < HeaderSize+(len(bad)-HeaderSize)/2+4; i++ {
			bad[i] ^= 0x5a
		}
		binary.BigEndian.PutUint32(bad[crcOffset:], Checksum(bad))
		truncated := compressBatch(t, plain, c.codec, func(src []byte) []byte { out := comp(src); return out[:len(out)/2] })
		// The header counts 3 records; the payload holds 2.
		short := compressBatch(t, plain, c.codec, func([]byte) []byte { return comp(two[HeaderSize:]) })
		for _, tc := range []struct {
			what string
			b    []byte
		}{{"corrupt", bad}, {"truncated", truncated}, {"2 records under a count of 3", short}} {
			if _, err := Validate(tc.b); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s, %s: Validate = %v, want ErrCorrupt", name, tc.what, err)
			}
			if _, _, err := Decode(tc.b, 0); err == nil {
				t.Errorf("%s, %s: Decode accepted it", name, tc.what)
			}
		}
	}
}

// TestDecompressionBomb: records that decompress past the limit are
// refused without being decompressed whole.
func TestDecompressionBomb(t *testing.T) {
	zeros := make([]byte, minDecompressedLimit+1)
	for _, c := range kgoCodecs {
		if c.codec == CodecSnappy {
			continue // below
		}
		b := compressBatch(t, Encode(nil, 0, NoProducer, sample()), c.codec, func([]byte) []byte {
			return kgoCompress(t, c.kgo, c.codec)(zeros)
		})
		if len(b)*MaxExpansion > minDecompressedLimit {
			t.Fatalf("%s: %d compressed bytes: not a bomb", codecName(c.codec), len(b))
		}
		_, err := Validate(b)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "more than") {
			t.Errorf("%s: Validate = %v, want ErrCorrupt naming the limit", codecName(c.codec), err)
		}
	}
	// Snappy expands at most ~21x; a block whose length prefix claims more
	// than the limit is refused before anything is allocated.
	lie := compressBatch(t, Encode(nil, 0, NoProducer, sample()), CodecSnappy, func([]byte) []byte {
		return append(binary.AppendUvarint(nil, 200<<20), 0, 0, 0, 0)
	})
	if _, err := Validate(lie); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "more than") {
		t.Errorf("snappy length lie: Validate = %v, want ErrCorrupt naming the limit", err)
	}
	if got := decompressedLimit(100 << 20); got != MaxDecompressedBytes {
		t.Fatalf("limit for 100 MiB = %d, want the cap", got)
	}
}

// FuzzCompressed compresses fuzzed record bytes with each codec (or uses
// them as the compressed payload as is), frames them as a batch with a
// right CRC, and checks: no panic, and what Validate accepts decodes to
// its record count.
func FuzzCompressed(f *testing.F) {
	plain := Encode(nil, 0, NoProducer, sample())
	f.Add(plain[HeaderSize:], uint8(3), uint8(CodecSnappy), true)
	f.Add(plain[HeaderSize:], uint8(3), uint8(CodecZstd), true)
	f.Add(xerialCompress(40)(plain[HeaderSize:]), uint8(3), uint8(CodecSnappy), false)
	f.Add([]byte("\x1f\x8b\x08\x00garbage"), uint8(1), uint8(CodecGzip), false)
	comps := map[int16]func([]byte) []byte{}
	for _, c := range kgoCodecs {
		comps[c.codec] = kgoCompress(f, c.kgo, c.codec)
	}
	f.Fuzz(func(t *testing.T, payload []byte, n, codec uint8, compress bool) {
		c := int16(codec%4) + 1
		if compress {
			payload = comps[c](payload)
		}
		b := rawBatch(func(b []byte) {
			binary.BigEndian.PutUint32(b[57:], uint32(n))
			binary.BigEndian.PutUint32(b[23:], uint32(int32(n)-1))
			binary.BigEndian.PutUint16(b[21:], uint16(c))
		})
		b = append(b, payload...)
		binary.BigEndian.PutUint32(b[lengthOffset:], uint32(len(b)-12))
		binary.BigEndian.PutUint32(b[crcOffset:], Checksum(b))
		_, _, decErr := Decode(b, 0)
		if _, err := Validate(b); err != nil {
			return
		}
		_, recs, err := Decode(b, 0)
		if err != nil || decErr != nil || len(recs) != int(n) {
			t.Fatalf("Validate accepts %d records that decode to %d, %v", n, len(recs), err)
		}
	})
}
