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
