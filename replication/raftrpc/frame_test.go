package raftrpc

import (
	"bytes"
	"errors"
	"reflect"
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
	b, _ = appendRequest(nil, rpcAppendEntries, 7, "p/t/0", &raft.AppendEntriesRequest{RPCHeader: header, Term: 3, LeaderCommitIndex: 9})
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

// The compact encoding carries every field of an empty append and of an
// append's answer; a raft version adding a field fails here.
func TestCompactAppendRoundTrip(t *testing.T) {
	if n := reflect.TypeOf(raft.AppendEntriesRequest{}).NumField(); n != 7 {
		t.Fatalf("raft.AppendEntriesRequest has %d fields; compact.go encodes 7", n)
	}
	if n := reflect.TypeOf(raft.AppendEntriesResponse{}).NumField(); n != 5 {
		t.Fatalf("raft.AppendEntriesResponse has %d fields; compact.go encodes 5", n)
	}
	if n := reflect.TypeOf(raft.RPCHeader{}).NumField(); n != 3 {
		t.Fatalf("raft.RPCHeader has %d fields; compact.go encodes 3", n)
	}
	hdr := raft.RPCHeader{ProtocolVersion: 3, ID: []byte("n1"), Addr: []byte{}}
	for _, req := range []*raft.AppendEntriesRequest{
		{RPCHeader: hdr, Term: 1 << 40, Leader: []byte("l"), PrevLogEntry: 7, PrevLogTerm: 6, LeaderCommitIndex: 5},
		{},
	} {
		b, err := appendRequest(nil, rpcAppendEntries, 3, "g", req)
		if err != nil {
			t.Fatal(err)
		}
		if b[4] != rpcEmptyAppend {
			t.Fatalf("an empty append of type %d", b[4])
		}
		got := readRequest(t, b)
		if !reflect.DeepEqual(got.cmd, req) || got.typ != rpcAppendEntries {
			t.Fatalf("decoded %#v, want %#v", got.cmd, req)
		}
	}
	for _, resp := range []*raft.AppendEntriesResponse{
		{RPCHeader: hdr, Term: 9, LastLog: 1 << 50, Success: true, NoRetryBackoff: true},
		{},
	} {
		b, err := appendResponse(nil, 3, resp, nil)
		if err != nil {
			t.Fatal(err)
		}
		fr := newFrameReader(bytes.NewReader(b))
		body, err := fr.next(responseHeader)
		if err != nil {
			t.Fatal(err)
		}
		var got raft.AppendEntriesResponse
		if err := fr.decodeAnswer(body[0], body[9:], &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&got, resp) {
			t.Fatalf("decoded %#v, want %#v", got, resp)
		}
		// A truncated answer is an error.
		if err := fr.decodeAnswer(body[0], body[9:len(body)-1], &got); !errors.Is(err, ErrBadFrame) {
			t.Fatalf("truncated answer: %v", err)
		}
	}
}

// readRequest decodes the one request frame b holds.
func readRequest(t *testing.T, b []byte) request {
	t.Helper()
	fr := newFrameReader(bytes.NewReader(b))
	body, err := fr.next(requestHeader)
	if err != nil {
		t.Fatal(err)
	}
	req, err := fr.decodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
