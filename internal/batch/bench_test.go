package batch

import "testing"

func BenchmarkEncode1KiB(b *testing.B) {
	recs := make([]Record, 1000)
	v := make([]byte, 1024)
	for i := range recs {
		recs[i] = Record{Timestamp: int64(i), Key: []byte("key-1"), Value: v}
	}
	var dst []byte
	b.SetBytes(1024 * 1000)
	for b.Loop() {
		dst = Encode(dst[:0], 0, NoProducer, recs)
	}
}

func BenchmarkEncode100B(b *testing.B) {
	recs := make([]Record, 1000)
	v := make([]byte, 100)
	for i := range recs {
		recs[i] = Record{Timestamp: int64(i), Value: v}
	}
	var dst []byte
	b.SetBytes(100 * 1000)
	for b.Loop() {
		dst = Encode(dst[:0], 0, NoProducer, recs)
	}
}

func BenchmarkEncodeFresh1KiB(b *testing.B) {
	recs := make([]Record, 1000)
	v := make([]byte, 1024)
	for i := range recs {
		recs[i] = Record{Timestamp: int64(i), Key: []byte("key-1"), Value: v}
	}
	b.SetBytes(1024 * 1000)
	for b.Loop() {
		_ = Encode(nil, 0, NoProducer, recs)
	}
}

// The cost of the checks on a produced batch: CheckFrame (CRC) alone, as
// a follower runs it, and Validate (CRC and every record), as produce runs it.
func benchCheck(b *testing.B, size int, check func([]byte) (Checked, error)) {
	recs := make([]Record, 1000)
	v := make([]byte, size)
	for i := range recs {
		recs[i] = Record{Timestamp: int64(i), Key: []byte("key-1"), Value: v}
	}
	enc := Encode(nil, 0, NoProducer, recs)
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := check(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckFrame1KiB(b *testing.B) { benchCheck(b, 1024, CheckFrame) }
func BenchmarkValidate1KiB(b *testing.B)   { benchCheck(b, 1024, Validate) }
func BenchmarkCheckFrame100B(b *testing.B) { benchCheck(b, 100, CheckFrame) }
func BenchmarkValidate100B(b *testing.B)   { benchCheck(b, 100, Validate) }
