package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors that close a connection. Each wraps errMalformed.
var (
	errMalformed        = errors.New("kafka: malformed request")
	errFrameTooLarge    = fmt.Errorf("%w: frame larger than the listener's limit", errMalformed)
	errUnknownAPI       = fmt.Errorf("%w: unknown api key", errMalformed)
	errUnsupportedVer   = fmt.Errorf("%w: api version not advertised", errMalformed)
	errTruncatedHeader  = fmt.Errorf("%w: truncated request header", errMalformed)
	errNegativeFrameLen = fmt.Errorf("%w: negative frame size", errMalformed)
)

// header is a request's header (v1, or v2 when the API version is flexible).
type header struct {
	key      int16
	version  int16
	corr     int32
	clientID string
}

// frameChunk is the most readFrame allocates ahead of the bytes a frame
// has actually delivered.
const frameChunk = 64 << 10

// readFrame reads one size-prefixed frame of at most limit bytes. The body
// grows as bytes arrive (by at most what has arrived, and frameChunk at
// first), so a size that is announced but never sent costs no more memory
// than what was sent.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	switch {
	case n < 0:
		return nil, errNegativeFrameLen
	case int64(n) > int64(limit) && otherProtocol(size) != "":
		return nil, fmt.Errorf("%w: the client speaks %s, not Kafka, to the node's Kafka listener", errMalformed, otherProtocol(size))
	case int64(n) > int64(limit):
		return nil, fmt.Errorf("%w (%d bytes, limit %d)", errFrameTooLarge, n, limit)
	}
	body := make([]byte, 0, min(int(n), frameChunk))
	for len(body) < int(n) {
		if len(body) == cap(body) {
			grown := make([]byte, len(body), min(2*len(body), int(n)))
			copy(grown, body)
			body = grown
		}
		end := min(cap(body), int(n))
		if _, err := io.ReadFull(r, body[len(body):end]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		body = body[:end]
	}
	return body, nil
}

// otherProtocol names the protocol whose first bytes a frame's size is (an
// HTTP/2 preface, as gRPC sends; an HTTP/1 method; a TLS record), or "".
func otherProtocol(size [4]byte) string {
	switch s := string(size[:]); {
	case s == "PRI ":
		return "HTTP/2 (a gRPC client, or h2c)"
	case s == "GET " || s == "POST" || s == "PUT " || s == "HEAD" || s == "DELE" || s == "OPTI" || s == "PATC":
		return "HTTP/1"
	case size[0] == 0x16 && size[1] == 3:
		return "TLS (the listener serves plaintext)"
	}
	return ""
}

// parseRequest decodes a frame's body into its header and request. A
// request at a version the listener does not advertise is an error, except
// ApiVersions, which is returned (with errUnsupportedVer) so that it can be
// answered with UNSUPPORTED_VERSION as the protocol asks.
func parseRequest(body []byte) (header, kmsg.Request, error) {
	var h header
	rd := kbin.Reader{Src: body}
	h.key = rd.Int16()
	h.version = rd.Int16()
	h.corr = rd.Int32()
	cid := rd.NullableString()
	if !rd.Ok() {
		return h, nil, errTruncatedHeader
	}
	if cid != nil {
		h.clientID = *cid
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil {
		return h, nil, fmt.Errorf("%w %d", errUnknownAPI, h.key)
	}
	if !supported(h.key, h.version) {
		if h.key == apiVersionsKey {
			return h, req, errUnsupportedVer
		}
		return h, nil, fmt.Errorf("%w: %s v%d", errUnsupportedVer, kmsg.NameForKey(h.key), h.version)
	}
	req.SetVersion(h.version)
	if req.IsFlexible() {
		kmsg.SkipTags(&rd)
		if !rd.Ok() {
			return h, nil, errTruncatedHeader
		}
	}
	if err := req.ReadFrom(rd.Src); err != nil {
		return h, nil, fmt.Errorf("%w: %s v%d: %v", errMalformed, kmsg.NameForKey(h.key), h.version, err)
	}
	return h, req, nil
}

// appendResponse appends resp's frame for correlation id corr to buf.
func appendResponse(buf []byte, corr int32, resp kmsg.Response) []byte {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
	// ApiVersions' response header is never flexible: a client must be able
	// to read it before it knows which versions the broker speaks.
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
	return buf
}

// appendToken appends a bare SASL token's frame (SaslHandshake v0: no
// header, only the size) to buf.
func appendToken(buf, token []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(token)))
	return append(buf, token...)
}
