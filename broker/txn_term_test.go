package broker

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/txn"
)

// termPlane is the metadata as the transaction coordinator sees it: its
// records, the term, and whether this node leads. The methods the
// coordinator does not use are left to the nil controlPlane.
type termPlane struct {
	controlPlane
	mu    sync.Mutex
	term  uint64
	recs  map[string][]byte
	terms map[string]uint64 // the term each record was written with
}

func (p *termPlane) setTerm(t uint64) { p.mu.Lock(); p.term = t; p.mu.Unlock() }

func (p *termPlane) metaTerm() uint64 { p.mu.Lock(); defer p.mu.Unlock(); return p.term }

func (p *termPlane) metaLeader() (Node, bool) { return Node{}, true }

func (p *termPlane) currentMeta(context.Context) error { return nil }

// putTxn is the metadata group's: a record is applied only from an
// entry of the term it names (meta.Command.Term); this node's entries
// are of its current term.
func (p *termPlane) putTxn(_ context.Context, id string, enc []byte, term uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if term != 0 && term != p.term {
		return errors.New("a record of another term's coordinator: not applied")
	}
	p.recs[id], p.terms[id] = enc, term
	return nil
}

func (p *termPlane) txnRecords(context.Context) (map[string][]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.recs), nil
}

func (p *termPlane) record(t *testing.T, id string) txn.Record {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	r, err := txn.DecodeRecord(p.recs[id])
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A coordinator made while its node led the metadata in one term neither
// writes nor answers from memory once the term moved on, though the node
// leads again: another leader's coordinator changed the records in
// between. Its step is refused with NotCoordinatorError (the client asks
// again and the node's current coordinator answers). Without it the
// coordinator of term 1, which ended transaction 1, answered an EndTxn
// (abort) of transaction 2, begun under the leader of term 2, with
// success from memory ("a retry of an end that was done") and left
// transaction 2 open: the producer's next transaction joined it and its
// commit committed the aborted records.
func TestTxnCoordinatorOfAnEarlierTermIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	plane := &termPlane{term: 1, recs: map[string][]byte{}, terms: map[string]uint64{}}
	b := &Broker{logger: slog.New(slog.DiscardHandler), plane: plane}
	h := &txnHolder{b: b}

	c1, err := h.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid, epoch, err := c1.InitProducerID(ctx, "tx", time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.AddOffsets(ctx, "tx", pid, epoch, "g"); err != nil {
		t.Fatal(err)
	}
	if err := c1.End(ctx, "tx", pid, epoch, false); err != nil {
		t.Fatal(err)
	}

	// Another node leads in term 2: its coordinator begins transaction 2.
	plane.setTerm(2)
	c2, err := h.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c2 == c1 {
		t.Fatal("the coordinator of term 1 serves term 2")
	}
	if err := c2.AddOffsets(ctx, "tx", pid, epoch, "g"); err != nil {
		t.Fatal(err)
	}

	// This node leads again, in term 3; a step of term 1's coordinator
	// still under way (it got it before) ends now.
	plane.setTerm(3)
	var nc *NotCoordinatorError
	if err := c1.End(ctx, "tx", pid, epoch, false); !errors.As(err, &nc) {
		t.Fatalf("EndTxn(abort) on the coordinator of term 1 in term 3: %v, want NotCoordinatorError", err)
	}
	if err := c1.AddOffsets(ctx, "tx", pid, epoch, "g2"); !errors.As(err, &nc) {
		t.Fatalf("AddOffsetsToTxn on the coordinator of term 1 in term 3: %v, want NotCoordinatorError", err)
	}
	if err := c1.Tick(ctx); err != nil {
		t.Fatalf("tick: %v", err) // nothing of term 1's is in flight or timed out
	}
	if r := plane.record(t, "tx"); r.State != txn.Ongoing || r.Txn != 2 || len(r.Groups) != 1 {
		t.Fatalf("record %+v, want transaction 2 ongoing with group g", r)
	}

	// The node's coordinator of term 3 ends transaction 2.
	c3, err := h.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c3.End(ctx, "tx", pid, epoch, false); err != nil {
		t.Fatal(err)
	}
	if r := plane.record(t, "tx"); r.State != txn.CompleteAbort || r.Txn != 2 {
		t.Fatalf("record %+v, want transaction 2 aborted", r)
	}
}
