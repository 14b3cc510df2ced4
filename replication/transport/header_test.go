package transport

import (
	"bytes"
	"errors"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, id := range []string{"meta", "p/orders/0", string(bytes.Repeat([]byte("x"), MaxGroupIDLen))} {
		got, err := readHeader(bytes.NewReader(appendHeader(nil, id)))
		if err != nil || got != id {
			t.Fatalf("%q: got %q, %v", id, got, err)
		}
	}
}

// The acceptor's header decoder never panics and either returns a valid
// group id or ErrBadHeader.
func FuzzReadHeader(f *testing.F) {
	f.Add(appendHeader(nil, "p/orders/0"))
	f.Add([]byte("LDRG\x01\x00\x00"))
	f.Add([]byte("LDRG\x02\x00\x01g"))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := readHeader(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrBadHeader) {
				t.Fatalf("error %v is not ErrBadHeader", err)
			}
			return
		}
		if validGroupID(id) != nil {
			t.Fatalf("accepted invalid group id %q", id)
		}
		if !bytes.HasPrefix(b, appendHeader(nil, id)) {
			t.Fatalf("group %q does not re-encode to the input's prefix", id)
		}
	})
}
