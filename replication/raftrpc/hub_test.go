package raftrpc

import (
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Every kind of RPC reaches its group and its answer comes back, for two
// groups sharing the link.
func TestCallsReachTheirGroup(t *testing.T) {
	a, b := newNode(t, Config{}), newNode(t, Config{})
	ta, ta2, tn := a.group(t, "g1"), a.group(t, "g2"), a.group(t, "nope")
	b1, b2 := b.group(t, "g1"), b.group(t, "g2")
	stop := make(chan struct{})
	defer close(stop)
	serve := func(tr *Transport, term uint64) {
		for {
			select {
			case rpc := <-tr.Consumer():
				switch rpc.Command.(type) {
				case *raft.AppendEntriesRequest:
					rpc.Respond(&raft.AppendEntriesResponse{Term: term, Success: true}, nil)
				case *raft.RequestVoteRequest:
					rpc.Respond(&raft.RequestVoteResponse{Term: term, Granted: true}, nil)
				case *raft.RequestPreVoteRequest:
					rpc.Respond(&raft.RequestPreVoteResponse{Term: term, Granted: true}, nil)
				case *raft.TimeoutNowRequest:
					rpc.Respond(&raft.TimeoutNowResponse{RPCHeader: raft.RPCHeader{ID: []byte("b")}}, nil)
				}
			case <-stop:
				return
			}
		}
	}
	go serve(b1, 7)
	go serve(b2, 9)
	var ae raft.AppendEntriesResponse
	if err := ta.AppendEntries("b", b.addr(), appendReq(7, 3, 2), &ae); err != nil || !ae.Success || ae.Term != 7 {
		t.Fatalf("append: %+v, %v", ae, err)
	}
	var rv raft.RequestVoteResponse
	if err := ta.RequestVote("b", b.addr(), &raft.RequestVoteRequest{RPCHeader: header, Term: 7}, &rv); err != nil || !rv.Granted || rv.Term != 7 {
		t.Fatalf("vote: %+v, %v", rv, err)
	}
	var pv raft.RequestPreVoteResponse
	if err := ta.RequestPreVote("b", b.addr(), &raft.RequestPreVoteRequest{RPCHeader: header, Term: 7}, &pv); err != nil || !pv.Granted {
		t.Fatalf("pre-vote: %+v, %v", pv, err)
	}
	var now raft.TimeoutNowResponse
	if err := ta.TimeoutNow("b", b.addr(), &raft.TimeoutNowRequest{RPCHeader: header}, &now); err != nil || string(now.ID) != "b" {
		t.Fatalf("timeout now: %+v, %v", now, err)
	}
	// Group g2 on a sends to g2 on b over the same link.
	var ae2 raft.AppendEntriesResponse
	if err := ta2.AppendEntries("b", b.addr(), heartbeat(9), &ae2); err != nil || ae2.Term != 9 {
		t.Fatalf("g2's heartbeat: %+v, %v", ae2, err)
	}
	// A group b does not have is an error answer, not a broken link.
	if err := tn.AppendEntries("b", b.addr(), heartbeat(9), &ae2); err == nil || !strings.Contains(err.Error(), "no group") {
		t.Fatalf("append to an unknown group: %v", err)
	}
	if err := ta.AppendEntries("b", b.addr(), heartbeat(7), &ae); err != nil {
		t.Fatalf("after an unknown group's answer: %v", err)
	}
}

// Once a link is up, neither a call nor the link's reader takes the Hub's
// mutex: on a starved node with a thousand groups electing at once, a
// reader queued on it behind every group's votes stopped reading for
// seconds, its peers' writes hit their deadline and the broken links
// failed every group's calls, over and over (bench-partitions at 1,000
// partitions, load 38: the reader in Hub.group, 487 calls in Hub.client,
// all on the Hub's mutex). Here both Hubs' mutexes are held while a call
// goes over the link and is answered.
func TestCallsOnALinkTakeNoHubLock(t *testing.T) {
	a, b := newNode(t, Config{}), newNode(t, Config{})
	ta, tb := a.group(t, "g"), b.group(t, "g")
	stop := make(chan struct{})
	defer close(stop)
	go answer(tb, 0, stop)
	var resp raft.AppendEntriesResponse
	if err := ta.AppendEntries("b", b.addr(), appendReq(3, 1, 1), &resp); err != nil || !resp.Success {
		t.Fatalf("append: %+v, %v", resp, err)
	}
	a.hub.mu.Lock()
	b.hub.mu.Lock()
	defer b.hub.mu.Unlock()
	defer a.hub.mu.Unlock()
	err := within(t, 5*time.Second, "an append with both Hubs' mutexes held", func() error {
		return ta.AppendEntries("b", b.addr(), appendReq(3, 2, 1), &resp)
	})
	if err != nil || !resp.Success || resp.LastLog != 3 {
		t.Fatalf("append with both Hubs' mutexes held: %+v, %v", resp, err)
	}
}

// A group whose Raft loop does not read its RPCs (a follower busy storing
// a large append) fills its own queue, whose next RPC is refused at once;
// another group's heartbeats on the same link are answered meanwhile.
func TestBusyGroupDoesNotDelayAnotherGroup(t *testing.T) {
	a := newNode(t, Config{})
	b := newNode(t, Config{QueueLen: 4})
	ta := a.group(t, "busy")
	tq, _ := a.hub.Group("quick", nil)
	defer tq.Close()
	b.group(t, "busy") // never read
	bq := b.group(t, "quick")
	stop := make(chan struct{})
	defer close(stop)
	go answer(bq, 0, stop)

	// One RPC in Raft's hands (never answered) and QueueLen queued: a
	// later one is refused at once.
	pending := make(chan error, 10)
	refused := false
	for i := 0; i < 10 && !refused; i++ {
		go func() {
			var resp raft.AppendEntriesResponse
			pending <- ta.AppendEntries("b", b.addr(), appendReq(1, 1, 1), &resp)
		}()
		select {
		case err := <-pending:
			if !strings.Contains(err.Error(), ErrBusy.Error()) {
				t.Fatalf("append %d to the busy group: %v, want %v", i, err, ErrBusy)
			}
			if i < 4 {
				t.Fatalf("append %d refused; the queue holds 4", i)
			}
			refused = true
		case <-time.After(300 * time.Millisecond):
		}
	}
	if !refused {
		t.Fatal("10 appends to a group that reads none: none refused")
	}
	var resp raft.AppendEntriesResponse
	for i := range 20 {
		err := within(t, 2*time.Second, "the other group's heartbeat", func() error {
			return tq.AppendEntries("b", b.addr(), heartbeat(3), &resp)
		})
		if err != nil || !resp.Success {
			t.Fatalf("heartbeat %d of the other group: %+v, %v", i, resp, err)
		}
	}
	select {
	case err := <-pending:
		t.Fatalf("an RPC of the busy group was answered: %v", err)
	default:
	}
}

// A link that breaks fails every call pending on it at once, and the next
// call dials a new link.
func TestCutLinkFailsPendingCallsAndRedials(t *testing.T) {
	a, b := newNode(t, Config{}), newNode(t, Config{})
	ta := a.group(t, "g")
	bg := b.group(t, "g")
	pending := make(chan error, 3)
	for range 3 {
		go func() {
			var resp raft.AppendEntriesResponse
			pending <- ta.AppendEntries("b", b.addr(), appendReq(1, 1, 1), &resp)
		}()
	}
	// Wait until b holds the first (its consumer is not read yet).
	var held raft.RPC
	select {
	case held = <-bg.Consumer():
	case <-time.After(5 * time.Second):
		t.Fatal("the append never reached b")
	}
	c, err := a.hub.client(b.addr())
	if err != nil {
		t.Fatal(err)
	}
	// Every call must be pending on this link when it breaks: one that
	// started after the cut would dial a new link and wait there.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		c.cmu.Lock()
		n := len(c.calls)
		c.cmu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 calls pending on the link after 5s", n)
		}
	}
	c.c.Close()
	for i := range 3 {
		select {
		case err := <-pending:
			if err == nil {
				t.Fatalf("call %d succeeded over a closed link", i)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("a call pending on a closed link still waits after 3s")
		}
	}
	held.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
	stop := make(chan struct{})
	defer close(stop)
	go answer(bg, 0, stop)
	var resp raft.AppendEntriesResponse
	if err := ta.AppendEntries("b", b.addr(), appendReq(1, 1, 1), &resp); err != nil || !resp.Success {
		t.Fatalf("call after the link broke: %+v, %v", resp, err)
	}
	if c2, _ := a.hub.client(b.addr()); c2 == c {
		t.Fatal("the broken link is still used")
	}
}

// A call whose answer does not come fails after Timeout (to within the
// expiry tick).
func TestCallTimesOut(t *testing.T) {
	a, b := newNode(t, Config{Timeout: time.Second}), newNode(t, Config{})
	ta := a.group(t, "g")
	b.group(t, "g") // never read
	var resp raft.AppendEntriesResponse
	err := within(t, 10*time.Second, "a call nobody answers", func() error {
		return ta.AppendEntries("b", b.addr(), appendReq(1, 1, 1), &resp)
	})
	if !errors.Is(err, errTimeout) {
		t.Fatalf("unanswered call: %v, want a timeout", err)
	}
}

// Bad input closes the link, without a panic, and the hub serves new
// links afterwards.
func TestMalformedFramesCloseTheLink(t *testing.T) {
	frame := func(typ byte, group string, payload []byte) []byte {
		b := []byte{0, 0, 0, 0, typ}
		b = binary.BigEndian.AppendUint64(b, 1)
		b = binary.BigEndian.AppendUint16(b, uint16(len(group)))
		b = append(b, group...)
		b = append(b, payload...)
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		return b
	}
	cases := map[string][]byte{
		"bad preface":      []byte("HTTP/1.1 GET /\r\n"),
		"huge length":      append([]byte(preface+"\x01"), 0xff, 0xff, 0xff, 0xff),
		"short frame":      append([]byte(preface+"\x01"), 0, 0, 0, 2, 0, 0),
		"unknown type":     append([]byte(preface+"\x01"), frame(9, "g", []byte{0x80})...),
		"group past end":   append([]byte(preface+"\x01"), 0, 0, 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff),
		"bad msgpack":      append([]byte(preface+"\x01"), frame(rpcAppendEntries, "g", []byte{0xc1, 0xc1})...),
		"empty payload":    append([]byte(preface+"\x01"), frame(rpcRequestVote, "g", nil)...),
		"snapshot on link": append([]byte(preface+"\x01"), frame(rpcInstallSnapshot, "g", []byte{0x80})...),
	}
	b := newNode(t, Config{})
	bg := b.group(t, "g")
	stop := make(chan struct{})
	defer close(stop)
	go answer(bg, 0, stop)
	// A Mux without a hub, whose ChannelID group dials b's links raw.
	third := newNode(t, Config{})
	third.hub.Close() // frees its ChannelID group
	raw, err := third.mux.Group(ChannelID)
	if err != nil {
		t.Fatal(err)
	}
	for name, input := range cases {
		c, err := raw.Dial(b.addr(), 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c.Write(input)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := io.ReadAll(c)
		if err != nil || len(n) != 0 {
			t.Fatalf("%s: read %q, %v; want the link closed (EOF) without an answer", name, n, err)
		}
		c.Close()
	}
	// b still serves.
	ta := newNode(t, Config{}).group(t, "g")
	var resp raft.AppendEntriesResponse
	if err := ta.AppendEntries("b", b.addr(), heartbeat(1), &resp); err != nil || !resp.Success {
		t.Fatalf("after the bad links: %+v, %v", resp, err)
	}
}

// Closing every transport and hub ends every goroutine they started.
func TestNoGoroutineLeftAfterClose(t *testing.T) {
	before := runtime.NumGoroutine()
	a, b := newNode(t, Config{}), newNode(t, Config{})
	ta := a.group(t, "g")
	bg := b.group(t, "g")
	stop := make(chan struct{})
	go answer(bg, 0, stop)
	p, err := ta.AppendEntriesPipeline("b", b.addr())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := p.AppendEntries(appendReq(1, uint64(i), 1), &raft.AppendEntriesResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	<-p.Consumer()
	var resp raft.AppendEntriesResponse
	if err := ta.AppendEntries("b", b.addr(), heartbeat(1), &resp); err != nil {
		t.Fatal(err)
	}
	close(stop)
	p.Close()
	ta.Close()
	bg.Close()
	a.close()
	b.close()
	waitGoroutines(t, before)
}
