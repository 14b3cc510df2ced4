package routing

import "testing"

// Vectors from Kafka's UtilsTest.testMurmur2.
func TestMurmur2MatchesKafka(t *testing.T) {
	cases := []struct {
		in   string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	}
	for _, c := range cases {
		if got := Murmur2([]byte(c.in)); got != c.want {
			t.Errorf("murmur2(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestForKeyInRange(t *testing.T) {
	for i := 0; i < 1000; i++ {
		k := []byte{byte(i), byte(i >> 8), 0xff}
		if p := ForKey(k, 7); p < 0 || p >= 7 {
			t.Fatalf("partition %d", p)
		}
	}
}

func TestValidateTopicName(t *testing.T) {
	good := []string{"a", "orders", "my.topic_1-x"}
	bad := []string{"", ".", "..", "a b", "a/b", string(make([]byte, 250))}
	for _, n := range good {
		if err := ValidateTopicName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range bad {
		if err := ValidateTopicName(n); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
}
