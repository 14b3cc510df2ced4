package recordtext

import "testing"

func TestTextOrBase64(t *testing.T) {
	for _, tc := range []struct {
		in             []byte
		text, encoding string
	}{
		{nil, "", ""},
		{[]byte("order-1"), "order-1", ""},
		{[]byte("héllo ✓"), "héllo ✓", ""},
		{[]byte{0xff, 0x00, 0x01}, "/wAB", "base64"},
		{[]byte("ab\xc3"), "YWLD", "base64"}, // a torn UTF-8 sequence
	} {
		text, enc := TextOrBase64(tc.in)
		if text != tc.text || enc != tc.encoding {
			t.Errorf("TextOrBase64(%q) = %q, %q; want %q, %q", tc.in, text, enc, tc.text, tc.encoding)
		}
	}
}
