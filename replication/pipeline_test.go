package replication

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/replication/transport"
)

// A follower refuses a pipelined append (its log does not match), and
// Raft's decoder, as hashicorp/raft's pipelineDecode does, stops reading
// answers after that one. Raft's sender may still send: with Raft's own
// pipeline the second send after that waits forever (the pipeline's reader
// waits to hand over the previous answer), so the follower never gets an
// entry again and Raft's Shutdown hangs. The pipeline must refuse such a
// send instead.
func TestPipelineSendAfterDecoderStoppedDoesNotBlock(t *testing.T) {
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Error})
	newStream := func() (*transport.Mux, net.Listener) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m, err := transport.New(transport.Config{Listener: ln, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m, ln
	}
	const group = "p/t/0"
	leaderMux, _ := newStream()
	followerMux, _ := newStream()
	leaderStream, err := leaderMux.Group(group)
	if err != nil {
		t.Fatal(err)
	}
	followerStream, err := followerMux.Group(group)
	if err != nil {
		t.Fatal(err)
	}
	leader := NewNetworkTransport(&raft.NetworkTransportConfig{Stream: leaderStream, MaxPool: 1, Timeout: 10 * time.Second, Logger: logger})
	defer leader.Close()
	follower := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: followerStream, MaxPool: 1, Timeout: 10 * time.Second, Logger: logger})
	defer follower.Close()
	// The follower refuses every append, at once.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case rpc := <-follower.Consumer():
				rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: false}, nil)
			case <-stop:
				return
			}
		}
	}()

	p, err := leader.AppendEntriesPipeline("f", raft.ServerAddress(followerMux.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("l"), Addr: []byte(leaderMux.Addr().String())}
	send := func() error {
		_, err := p.AppendEntries(&raft.AppendEntriesRequest{RPCHeader: header, Term: 1, PrevLogEntry: 5, PrevLogTerm: 1}, &raft.AppendEntriesResponse{})
		return err
	}
	if err := send(); err != nil {
		t.Fatal(err)
	}
	// The decoder reads the refusal and stops, as Raft's does.
	select {
	case f := <-p.Consumer():
		if f.Response().Success {
			t.Fatal("the follower refused the append, the answer says it succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to the first append in 10s")
	}
	// Raft's sender goes on sending until it sees the decoder finished.
	done := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 4 && err == nil; i++ {
			err = send()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("four sends after the decoder stopped all succeeded; want the pipeline shut down")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a send after the decoder stopped still waits after 10s: the pipeline deadlocks (hashicorp/raft pipelineDecode/decodeResponses)")
	}
}
