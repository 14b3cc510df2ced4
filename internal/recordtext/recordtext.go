// Package recordtext renders a record's key or value as JSON text, the one
// rule shared by `logd consume --json` and the HTTP API's records and
// events: bytes that are valid UTF-8 appear as they are; others appear in
// standard base64, with the field's encoding ("key_encoding",
// "value_encoding") set to "base64" so a reader can tell them apart.
package recordtext

import (
	"encoding/base64"
	"unicode/utf8"
)

// TextOrBase64 is b as a string and encoding "" when b is valid UTF-8,
// else b in standard base64 and encoding "base64".
func TextOrBase64(b []byte) (text, encoding string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return base64.StdEncoding.EncodeToString(b), "base64"
}
