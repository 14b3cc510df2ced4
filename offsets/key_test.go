package offsets

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestKeyRoundTrip(t *testing.T) {
	for _, g := range []string{"g", "\x00", "\x00\x01", "a\x00\xff", "\xff\xff", "x/y/z", strings.Repeat("\x00", 10)} {
		for _, tp := range []string{"t", "t.x", "T_-9"} {
			for _, p := range []int32{0, 1, 255, 256, 1<<31 - 1} {
				gg, tt, pp, err := parseKey(offsetKey(g, tp, p))
				if err != nil || gg != g || tt != tp || pp != p {
					t.Fatalf("parseKey(offsetKey(%q,%q,%d)) = %q,%q,%d,%v", g, tp, p, gg, tt, pp, err)
				}
			}
		}
	}
}

// The encoding sorts like the strings it encodes and never lets two
// distinct (group, topic) pairs produce one key.
func TestKeyEncodingOrderAndUniqueness(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0x00, 0x01, 0xff, '/', 'a', 'b'}
	randString := func() string {
		b := make([]byte, rng.IntN(5))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	seen := map[string][2]string{}
	for range 20000 {
		a, b := randString(), randString()
		ea, eb := appendString(nil, a), appendString(nil, b)
		if got, want := bytes.Compare(ea, eb), strings.Compare(a, b); got != want {
			t.Fatalf("order of %q vs %q: encoded %d, strings %d", a, b, got, want)
		}
		pair := [2]string{a, b}
		k := string(offsetKey(a, b, 7))
		if prev, ok := seen[k]; ok && prev != pair {
			t.Fatalf("collision: %q and %q share key %q", prev, pair, k)
		}
		seen[k] = pair
		// Every key of group a lies inside a's range and outside b's.
		if a != b {
			if bytes.HasPrefix([]byte(k), groupPrefix(b)) {
				t.Fatalf("key of group %q lies in the range of group %q", a, b)
			}
		}
	}
}

func TestParseKeyRejectsMalformed(t *testing.T) {
	for _, k := range [][]byte{
		nil,
		[]byte("offsets"),
		[]byte("topic/x"),
		[]byte("offsets/g"),     // unterminated group
		[]byte("offsets/g\x00"), // cut escape
		[]byte("offsets/g\x00\x02t\x00\x01\x00\x00\x00\x00"), // bad escape
		append(topicPrefix("g", "t"), 0, 0, 1),               // 3-byte partition
		append(topicPrefix("g", "t"), 0x80, 0, 0, 0),         // partition above int32
	} {
		if _, _, _, err := parseKey(k); !errors.Is(err, ErrCorrupt) {
			t.Errorf("parseKey(%q) = %v, want ErrCorrupt", k, err)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	f.Add(offsetKey("g", "t", 1))
	f.Add(offsetKey("a\x00b", "t", 0))
	f.Add([]byte("offsets/\x00"))
	f.Fuzz(func(t *testing.T, k []byte) {
		g, tp, p, err := parseKey(k)
		if err != nil {
			return
		}
		if again := offsetKey(g, tp, p); !bytes.Equal(again, k) {
			t.Fatalf("parseKey(%q) = %q,%q,%d which encodes to %q", k, g, tp, p, again)
		}
	})
}

func FuzzDecodeValue(f *testing.F) {
	f.Add(encodeValue(5, 1700000000000, "meta"))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, v []byte) {
		c, err := decodeValue([]byte("k"), v)
		if err != nil {
			return
		}
		if again := encodeValue(c.Offset, c.CommitTime.UnixMilli(), c.Metadata); !bytes.Equal(again, v) {
			t.Fatalf("decodeValue(%x) = %+v which encodes to %x", v, c, again)
		}
	})
}
