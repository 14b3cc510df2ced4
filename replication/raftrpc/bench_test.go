package raftrpc

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkAppendRoundTrip measures one group's AppendEntries round trips
// over a link (the peer answers at once), for an empty append (a
// heartbeat) and for one entry of 1 MiB; compare with
// BenchmarkNetworkTransportAppendRoundTrip, hashicorp/raft's transport over
// the same Mux.
func BenchmarkAppendRoundTrip(b *testing.B) {
	for _, size := range []int{0, 1 << 20} {
		b.Run(fmt.Sprintf("entry=%d", size), func(b *testing.B) {
			t := &testing.T{}
			a, p := newNode(t, Config{}), newNode(t, Config{})
			defer a.close()
			defer p.close()
			ta, _ := a.hub.Group("g", nil)
			tp, _ := p.hub.Group("g", nil)
			defer ta.Close()
			defer tp.Close()
			stop := make(chan struct{})
			defer close(stop)
			go answer(tp, 0, stop)
			req := benchAppend(size)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for range b.N {
				var resp raft.AppendEntriesResponse
				if err := ta.AppendEntries("p", p.addr(), req, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNetworkTransportAppendRoundTrip is BenchmarkAppendRoundTrip
// over hashicorp/raft's NetworkTransport on streams of the same Mux.
func BenchmarkNetworkTransportAppendRoundTrip(b *testing.B) {
	for _, size := range []int{0, 1 << 20} {
		b.Run(fmt.Sprintf("entry=%d", size), func(b *testing.B) {
			t := &testing.T{}
			a, p := newNode(t, Config{}), newNode(t, Config{})
			defer a.close()
			defer p.close()
			sa, _ := a.mux.Group("g")
			sp, _ := p.mux.Group("g")
			ta := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: sa, MaxPool: 3, Timeout: 10 * time.Second, Logger: testLogger})
			tp := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: sp, MaxPool: 3, Timeout: 10 * time.Second, Logger: testLogger})
			defer ta.Close()
			defer tp.Close()
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case rpc := <-tp.Consumer():
						rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: true}, nil)
					case <-stop:
						return
					}
				}
			}()
			req := benchAppend(size)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for range b.N {
				var resp raft.AppendEntriesResponse
				if err := ta.AppendEntries("p", raft.ServerAddress(p.mux.Addr().String()), req, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchAppend(size int) *raft.AppendEntriesRequest {
	req := &raft.AppendEntriesRequest{RPCHeader: header, Term: 1, PrevLogEntry: 1, PrevLogTerm: 1, LeaderCommitIndex: 1}
	if size > 0 {
		req.Entries = []*raft.Log{{Index: 2, Term: 1, Type: raft.LogCommand, Data: make([]byte, size)}}
	}
	return req
}
