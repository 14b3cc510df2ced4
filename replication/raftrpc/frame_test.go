package raftrpc

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// A request frame decodes to what was encoded.
func TestRequestRoundTrip(t *testing.T) {
	req := appendReq(4, 10, 3)
	b, err := appendRequest(nil, rpcAppendEntries, 42, "p/t/0", req)
	if err != nil {
		t.Fatal(err)
	}
	fr := newFrameReader(bytes.NewReader(b))
	body, err := fr.next(requestHeader)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fr.decodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	ae, ok := got.cmd.(*raft.AppendEntriesRequest)
	if got.id != 42 || got.group != "p/t/0" || !ok || ae.Term != 4 || ae.PrevLogEntry != 10 || len(ae.Entries) != 3 ||
		string(ae.Entries[2].Data) != "entry" || ae.Entries[2].Index != 13 {
		t.Fatalf("decoded %+v (%+v)", got, got.cmd)
	}
	// The decoded entries do not share the reader's buffer, which the
	// next frame overwrites.
	copy(body, bytes.Repeat([]byte{0xee}, len(body)))
	if string(ae.Entries[0].Data) != "entry" {
		t.Fatalf("entry data aliases the read buffer: %q", ae.Entries[0].Data)
	}
	if isHeartbeat(ae) || !isHeartbeat(heartbeat(1)) {
		t.Fatal("isHeartbeat")
	}
}

// Whatever the bytes, the decoder returns a request or an error, never
// panics.
func FuzzDecodeRequest(f *testing.F) {
	for _, typ := range []byte{rpcAppendEntries, rpcRequestVote, rpcTimeoutNow, rpcRequestPreVote} {
		b, err := appendRequest(nil, typ, 1, "g", heartbeat(1))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	b, _ := appendRequest(nil, rpcAppendEntries, 7, "p/t/0", appendReq(2, 5, 2))
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := newFrameReader(bytes.NewReader(b))
		for {
			body, err := fr.next(requestHeader)
			if err != nil {
				return
			}
			if _, err := fr.decodeRequest(body); err != nil && !errors.Is(err, ErrBadFrame) {
				t.Fatalf("error not ErrBadFrame: %v", err)
			}
		}
	})
}
