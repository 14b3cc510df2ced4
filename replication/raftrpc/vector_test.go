package raftrpc

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// vecAppend is an append of n entries, every other one large enough to be
// an extent, each entry's bytes made from seed and its index.
func vecAppend(seed byte, n int) *raft.AppendEntriesRequest {
	req := appendReq(3, 10, n)
	for i, e := range req.Entries {
		size := 100 + i
		if i%2 == 0 {
			size = minExtent + 3 + 1000*i
		}
		e.Data = bytes.Repeat([]byte{seed, byte(i), 0x5a}, size/3)
		e.Extensions = []byte{byte(i)}
	}
	return req
}

// joined is what a vectored write of frames and ext puts on the wire.
func joined(frames []byte, ext []extent) []byte {
	return bytes.Join(buffers(nil, frames, ext), nil)
}

func checkEntries(t *testing.T, what string, got, want *raft.AppendEntriesRequest) {
	t.Helper()
	if len(got.Entries) != len(want.Entries) || got.Term != want.Term || got.PrevLogEntry != want.PrevLogEntry {
		t.Fatalf("%s: decoded %d entries, term %d, prev %d; want %d, %d, %d", what,
			len(got.Entries), got.Term, got.PrevLogEntry, len(want.Entries), want.Term, want.PrevLogEntry)
	}
	for i, w := range want.Entries {
		g := got.Entries[i]
		if g.Index != w.Index || g.Term != w.Term || g.Type != w.Type || !bytes.Equal(g.Data, w.Data) || !bytes.Equal(g.Extensions, w.Extensions) {
			t.Fatalf("%s: entry %d: %d bytes of index %d, want %d bytes of index %d", what, i, len(g.Data), g.Index, len(w.Data), w.Index)
		}
	}
}

// An append encoded with its large entries as extents decodes, once they
// are written in place, to the same request as one copied whole; the
// frame's length counts them.
func TestVectoredAppendRoundTrip(t *testing.T) {
	req := vecAppend(1, 7)
	var ext []extent
	frames, err := appendRequestVec([]byte("prefix"), &ext, rpcAppendEntries, 9, "p/t/0", req)
	if err != nil {
		t.Fatal(err)
	}
	if len(ext) != 4 {
		t.Fatalf("%d extents, want the 4 large entries", len(ext))
	}
	for i, x := range ext {
		if &x.b[0] != &req.Entries[2*i].Data[0] {
			t.Fatalf("extent %d is not entry %d's own bytes", i, 2*i)
		}
	}
	copied, err := appendRequest([]byte("prefix"), rpcAppendEntries, 9, "p/t/0", req)
	if err != nil {
		t.Fatal(err)
	}
	if w := joined(frames, ext); !bytes.Equal(w, copied) {
		t.Fatalf("vectored frame (%d bytes) differs from the copied one (%d)", len(w), len(copied))
	}
	fr := newFrameReader(bytes.NewReader(copied[len("prefix"):]))
	body, err := fr.next(requestHeader)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fr.decodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, "round trip", got.cmd.(*raft.AppendEntriesRequest), req)
}

// dropEnded keeps exactly the requests of calls still pending, with their
// own extents at the right places, whatever the mix of copied frames and
// frames with extents.
func TestDropEndedKeepsExtentsOfPendingCalls(t *testing.T) {
	c := &client{calls: map[uint64]*call{2: {}, 3: {}, 6: {}}}
	var frames []byte
	var ext []extent
	reqs := map[uint64]*raft.AppendEntriesRequest{}
	for id := uint64(1); id <= 6; id++ {
		var args any = heartbeat(id)
		if id != 3 && id != 5 {
			r := vecAppend(byte(id), int(id))
			reqs[id], args = r, r
		}
		var err error
		if frames, err = appendRequestVec(frames, &ext, rpcAppendEntries, id, "g", args); err != nil {
			t.Fatal(err)
		}
	}
	kept, keptExt := c.dropEnded(frames, ext)
	fr := newFrameReader(bytes.NewReader(joined(kept, keptExt)))
	for _, want := range []uint64{2, 3, 6} {
		b, err := fr.next(requestHeader)
		if err != nil {
			t.Fatalf("request %d: %v", want, err)
		}
		req, err := fr.decodeRequest(b)
		if err != nil || req.id != want {
			t.Fatalf("request %d: got id %d, %v", want, req.id, err)
		}
		if r := reqs[want]; r != nil {
			checkEntries(t, fmt.Sprintf("request %d", want), req.cmd.(*raft.AppendEntriesRequest), r)
		}
	}
	if _, err := fr.next(requestHeader); err != io.EOF {
		t.Fatalf("after the kept requests: %v, want EOF", err)
	}
}

// Over a direct link, appends sent back to back through a pipeline, their
// large entries written from their own bytes, arrive each with its own
// bytes: the link's reused write buffer and vector never mix one append's
// bytes into another's.
func TestVectoredLinkCarriesEntriesIntact(t *testing.T) {
	a, b := newNode(t, Config{}), newNode(t, Config{})
	ta, tb := a.group(t, "g"), b.group(t, "g")
	const n = 40
	want := make([]*raft.AppendEntriesRequest, n)
	for i := range want {
		want[i] = vecAppend(byte(i), 1+i%5)
	}
	got := make(chan error, 1)
	go func() {
		for i := range n {
			rpc := <-tb.Consumer()
			req := rpc.Command.(*raft.AppendEntriesRequest)
			var err error
			if len(req.Entries) != len(want[i].Entries) || !bytes.Equal(req.Entries[0].Data, want[i].Entries[0].Data) {
				err = fmt.Errorf("append %d: %d entries unlike those sent", i, len(req.Entries))
			}
			for j, e := range req.Entries {
				if err == nil && !bytes.Equal(e.Data, want[i].Entries[j].Data) {
					err = fmt.Errorf("append %d, entry %d: %d bytes unlike those sent", i, j, len(e.Data))
				}
			}
			rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: true}, nil)
			if err != nil {
				got <- err
				return
			}
		}
		got <- nil
	}()
	p, err := ta.AppendEntriesPipeline("b", b.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := a.hub.client(b.addr())
	if err != nil {
		t.Fatal(err)
	}
	if c.vec == nil {
		t.Fatal("the link over a direct TCP connection does not write vectors")
	}
	answered := make(chan error, 1)
	go func() {
		for range n {
			f := <-p.Consumer()
			if err := f.Error(); err != nil {
				answered <- err
				return
			}
		}
		answered <- nil
	}()
	for i := range n {
		if _, err := p.AppendEntries(want[i], &raft.AppendEntriesResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := within(t, 20*time.Second, "the appends", func() error { return <-got }); err != nil {
		t.Fatal(err)
	}
	if err := within(t, 20*time.Second, "the answers", func() error { return <-answered }); err != nil {
		t.Fatal(err)
	}
}

// countingLayer counts the links a Hub dials.
type countingLayer struct {
	raft.StreamLayer
	dials atomic.Int64
}

func (l *countingLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	l.dials.Add(1)
	return l.StreamLayer.Dial(address, timeout)
}

// A link on which calls time out while nothing at all is read for
// Config.Silence (a peer gone silent: a direct connection has no session
// keep-alive) is failed, and the next call dials a new one.
func TestSilentLinkIsRedialed(t *testing.T) {
	var layer *countingLayer
	a := newNodeWith(t, Config{Timeout: 300 * time.Millisecond, Silence: 500 * time.Millisecond},
		func(s raft.StreamLayer) raft.StreamLayer { layer = &countingLayer{StreamLayer: s}; return layer })
	b := newNode(t, Config{})
	ta := a.group(t, "g")
	b.group(t, "g") // registered, never answers: nothing reads its Consumer
	var resp raft.AppendEntriesResponse
	if err := ta.AppendEntries("b", b.addr(), heartbeat(1), &resp); err == nil {
		t.Fatal("a call nobody answers succeeded")
	}
	if n := layer.dials.Load(); n != 1 {
		t.Fatalf("%d links dialed, want 1", n)
	}
	deadline := time.Now().Add(20 * time.Second)
	for layer.dials.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the silent link was never failed and dialed again")
		}
		ta.AppendEntries("b", b.addr(), heartbeat(1), &resp)
	}
}
