package raftrpc

import (
	"testing"

	"github.com/hashicorp/raft"
)

// An accepted append moves the peer's Ack to the last index it covers,
// never back within a term; a refused one or an older term's answer
// changes nothing; a newer term starts it again.
func TestAcked(t *testing.T) {
	var tr Transport
	ok := &raft.AppendEntriesResponse{Success: true}
	appendReq := func(term, prev uint64, entries ...uint64) *raft.AppendEntriesRequest {
		req := &raft.AppendEntriesRequest{Term: term, PrevLogEntry: prev}
		for _, i := range entries {
			req.Entries = append(req.Entries, &raft.Log{Index: i})
		}
		return req
	}
	for i, step := range []struct {
		args              *raft.AppendEntriesRequest
		resp              *raft.AppendEntriesResponse
		wantTerm, wantIdx uint64
	}{
		{appendReq(2, 4, 5, 6), ok, 2, 6},
		{appendReq(2, 0), ok, 2, 6},                                                     // a heartbeat
		{appendReq(2, 4, 5), ok, 2, 6},                                                  // a late answer
		{appendReq(2, 6, 7), &raft.AppendEntriesResponse{}, 2, 6},                       // refused
		{appendReq(2, 6, 7), &raft.AppendEntriesResponse{Term: 3, Success: true}, 2, 6}, // from a newer leader's follower
		{appendReq(1, 8, 9), ok, 2, 6},                                                  // an older term
		{appendReq(3, 5, 6), ok, 3, 6},
		{appendReq(3, 6, 7, 8), ok, 3, 8},
	} {
		tr.acked("p", step.args, step.resp)
		if a := tr.Acked("p"); a.Term != step.wantTerm || a.Index != step.wantIdx {
			t.Fatalf("step %d: Ack term %d index %d, want %d and %d", i, a.Term, a.Index, step.wantTerm, step.wantIdx)
		}
	}
	if a := tr.Acked("q"); a != (Ack{}) {
		t.Fatalf("a peer never heard from: %+v", a)
	}
}
