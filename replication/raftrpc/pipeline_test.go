package raftrpc

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Answers reach the pipeline's consumer in the order of the sends, also
// when a later one comes back first (here: refused at once by a full
// queue while the earlier ones wait in it), and the pipeline shuts down
// after the first refusal.
func TestPipelineAnswersInOrder(t *testing.T) {
	a := newNode(t, Config{PipelineDepth: 8})
	b := newNode(t, Config{QueueLen: 2})
	ta := a.group(t, "g")
	bg := b.group(t, "g")
	stop := make(chan struct{})
	defer close(stop)
	go answer(bg, 300*time.Millisecond, stop)

	p, err := ta.AppendEntriesPipeline("b", b.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var sent []*raft.AppendEntriesRequest
	for i := range 6 {
		req := appendReq(1, uint64(i), 1)
		if _, err := p.AppendEntries(req, &raft.AppendEntriesResponse{}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		sent = append(sent, req)
	}
	var failed bool
	for i := 0; !failed; i++ {
		select {
		case f := <-p.Consumer():
			if f.Request() != sent[i] {
				t.Fatalf("answer %d is for request %d", i, f.Request().PrevLogEntry)
			}
			if f.Error() != nil {
				failed = true
				if i < 2 {
					t.Errorf("answer %d failed (%v); the queue holds two", i, f.Error())
				}
				continue
			}
			if !f.Response().Success {
				t.Fatalf("answer %d: %+v", i, f.Response())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer %d in 10s", i)
		}
	}
	// After the refusal Raft's decoder has stopped: sends fail, none blocks.
	err = within(t, 5*time.Second, "a send after the refusal", func() error {
		var err error
		for i := 0; i < 10 && err == nil; i++ {
			_, err = p.AppendEntries(appendReq(1, 9, 1), &raft.AppendEntriesResponse{})
		}
		return err
	})
	if err != raft.ErrPipelineShutdown {
		t.Fatalf("send after the refusal: %v, want %v", err, raft.ErrPipelineShutdown)
	}
}

// A follower refuses a pipelined append; Raft's decoder stops reading
// answers after it and its sender may go on: the sends must fail instead
// of waiting forever (replication/pipeline_test.go has the story).
func TestPipelineSendAfterDecoderStoppedDoesNotBlock(t *testing.T) {
	a, b := newNode(t, Config{PipelineDepth: 2}), newNode(t, Config{})
	ta := a.group(t, "g")
	bg := b.group(t, "g")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case rpc := <-bg.Consumer():
				rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: false}, nil)
			case <-stop:
				return
			}
		}
	}()
	p, err := ta.AppendEntriesPipeline("b", b.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.AppendEntries(appendReq(1, 5, 0), &raft.AppendEntriesResponse{}); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-p.Consumer():
		if f.Response().Success {
			t.Fatal("the follower refused, the answer says success")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer in 10s")
	}
	err = within(t, 10*time.Second, "sends after the decoder stopped", func() error {
		var err error
		for i := 0; i < 4 && err == nil; i++ {
			_, err = p.AppendEntries(appendReq(1, 5, 0), &raft.AppendEntriesResponse{})
		}
		return err
	})
	if err == nil {
		t.Fatal("four sends after the decoder stopped all succeeded; want the pipeline shut down")
	}
}
