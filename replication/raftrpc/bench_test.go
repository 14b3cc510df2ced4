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
	benchRoundTrips(b, func(a, p *node) (from, to raft.Transport) {
		ta, _ := a.hub.Group("g", nil)
		tp, _ := p.hub.Group("g", nil)
		return ta, tp
	})
}

// BenchmarkNetworkTransportAppendRoundTrip is BenchmarkAppendRoundTrip
// over hashicorp/raft's NetworkTransport on streams of the same Mux.
func BenchmarkNetworkTransportAppendRoundTrip(b *testing.B) {
	benchRoundTrips(b, func(a, p *node) (from, to raft.Transport) {
		sa, _ := a.mux.Group("g")
		sp, _ := p.mux.Group("g")
		return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: sa, MaxPool: 3, Timeout: 10 * time.Second, Logger: testLogger}),
			raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: sp, MaxPool: 3, Timeout: 10 * time.Second, Logger: testLogger})
	})
}

// benchRoundTrips times appends from a's transport to p's, which answers
// at once; pair makes the two (closed after).
func benchRoundTrips(b *testing.B, pair func(a, p *node) (from, to raft.Transport)) {
	for _, size := range []int{0, 1 << 20} {
		b.Run(fmt.Sprintf("entry=%d", size), func(b *testing.B) {
			t := &testing.T{}
			a, p := newNode(t, Config{}), newNode(t, Config{})
			defer a.close()
			defer p.close()
			from, to := pair(a, p)
			defer from.(raft.WithClose).Close()
			defer to.(raft.WithClose).Close()
			stop := make(chan struct{})
			defer close(stop)
			go answer(to, 0, stop)
			req := benchAppend(size)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for range b.N {
				var resp raft.AppendEntriesResponse
				if err := from.AppendEntries("p", p.addr(), req, &resp); err != nil {
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
