package raftrpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

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
	if body[0] != rpcAppend {
		t.Fatalf("an append with entries went as request type %d, want the compact %d", body[0], rpcAppend)
	}
	// The decoded entries are not overwritten by the next frame read.
	fr.r = bytes.NewReader(bytes.Repeat(b, 2))
	for range 2 {
		if _, err := fr.next(requestHeader); err != nil {
			t.Fatal(err)
		}
	}
	if string(ae.Entries[0].Data) != "entry" {
		t.Fatalf("entry data overwritten by the next frame: %q", ae.Entries[0].Data)
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
	b, _ = appendMsgpackRequest(7, "p/t/0", appendReq(2, 5, 2))
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

// An append with entries travels compact and comes back field for field,
// however its entries are made.
func TestCompactAppendWithEntriesRoundTrip(t *testing.T) {
	if n := reflect.TypeOf(raft.Log{}).NumField(); n != 6 {
		t.Fatalf("raft.Log has %d fields; compact.go encodes 6", n)
	}
	at := time.Unix(1_700_000_000, 123456789)
	req := &raft.AppendEntriesRequest{RPCHeader: header, Term: 7, PrevLogEntry: 99, PrevLogTerm: 6, LeaderCommitIndex: 98,
		Entries: []*raft.Log{
			{Index: 100, Term: 7, Type: raft.LogCommand, Data: bytes.Repeat([]byte{1, 2, 3}, 1000), AppendedAt: at},
			{Index: 101, Term: 7, Type: raft.LogNoop},
			{Index: 102, Term: 7, Type: raft.LogConfiguration, Data: []byte{}, Extensions: []byte("ext")},
			{Index: 103, Term: 7, Type: raft.LogBarrier, Data: []byte("x")},
		}}
	//lint:ignore SA1019 every field is carried
	req.Leader = []byte("n1")
	b, err := appendRequest(nil, rpcAppendEntries, 5, "p/t/1", req)
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
	ae := got.cmd.(*raft.AppendEntriesRequest)
	//lint:ignore SA1019 every field is carried
	leader := ae.Leader
	if got.typ != rpcAppendEntries || !reflect.DeepEqual(ae.RPCHeader, req.RPCHeader) || ae.Term != req.Term ||
		ae.PrevLogEntry != req.PrevLogEntry || ae.PrevLogTerm != req.PrevLogTerm || ae.LeaderCommitIndex != req.LeaderCommitIndex ||
		string(leader) != "n1" || len(ae.Entries) != len(req.Entries) {
		t.Fatalf("decoded %+v, want %+v", ae, req)
	}
	for i, w := range req.Entries {
		g := ae.Entries[i]
		if g.Index != w.Index || g.Term != w.Term || g.Type != w.Type || !bytes.Equal(g.Data, w.Data) ||
			(g.Data == nil) != (w.Data == nil) || !bytes.Equal(g.Extensions, w.Extensions) || !g.AppendedAt.Equal(w.AppendedAt) {
			t.Fatalf("entry %d: got %+v, want %+v", i, g, w)
		}
	}
	// Appending to a decoded entry's data does not run into the next one.
	_ = append(ae.Entries[2].Data, 0xff)
	if !bytes.Equal(ae.Entries[2].Extensions, []byte("ext")) {
		t.Fatal("an append to one entry's data overwrote the frame after it")
	}
	// Truncated anywhere, the frame is an error, never a panic.
	for n := len(body) - 1; n > 11+len("p/t/1"); n-- {
		if _, err := newFrameReader(nil).decodeRequest(body[:n]); err == nil {
			t.Fatalf("a frame cut to %d of %d bytes decoded", n, len(body))
		}
	}
}

// appendMsgpackRequest is an append with entries encoded as msgpack
// (rpcAppendEntries), which the reader still decodes.
func appendMsgpackRequest(id uint64, group string, r *raft.AppendEntriesRequest) ([]byte, error) {
	dst := []byte{0, 0, 0, 0, rpcAppendEntries}
	dst = binary.BigEndian.AppendUint64(dst, id)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(group)))
	dst = append(dst, group...)
	dst, err := appendMsgpack(dst, r)
	if err != nil {
		return nil, err
	}
	return finishFrame(dst, 0)
}

// A link keeps a write buffer grown by large appends while they go on,
// even when a frame is a little under the size that grew it, and drops it
// after a run of small writes or when it grew too large.
func TestLinkKeepsWriteBufferWhileLargeAppendsGoOn(t *testing.T) {
	big := make([]byte, keepBuffer-100, 2*keepBuffer)
	buf, small := keepWritten(big, 0)
	if cap(buf) != cap(big) || len(buf) != 0 || small != 0 {
		t.Fatalf("a large append's buffer: cap %d len %d small %d, want it kept empty", cap(buf), len(buf), small)
	}
	for i := 1; i < keepSmallWrites; i++ {
		if buf, small = keepWritten(buf[:100], small); buf == nil {
			t.Fatalf("dropped after %d small writes, want %d", i, keepSmallWrites)
		}
	}
	if buf, _ = keepWritten(buf[:100], small); buf != nil {
		t.Fatalf("kept after %d small writes in a row", keepSmallWrites)
	}
	if buf, _ = keepWritten(make([]byte, keepWriteBuffer, keepWriteBuffer+1), 0); buf != nil {
		t.Fatal("a buffer over keepWriteBuffer was kept")
	}
	if buf, _ = keepWritten(make([]byte, 10, 4096), keepSmallWrites); cap(buf) != 4096 {
		t.Fatal("a small buffer was dropped")
	}
}
