package broker

import (
	"context"
	"testing"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/share"
)

// A leader that appended a dead letter and died before archiving it
// leaves it DeadLettering in the stored state; the node that serves the
// share partition next (here the same one, after a restart) appends it
// again with the same writer and sequence, and the dead-letter partition
// stores it once.
func TestShareDeadLetterRetryStoredOnce(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	// The first leader: acquire and reject 0, store the DeadLettering
	// state, append the dead letter, and die before archiving it.
	b, sp, q := rejectStored(t, dir, "")
	dls := q.DeadLetters()
	src, _ := b.topics.Config("q")
	dp, dcfg, err := b.deadLetterPartition(ctx, "q.dlq", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := batch.Encode(nil, 0, batch.Producer{ID: shareWriterID("g", sp.ref, sp.created), Sequence: dls[0].Sequence},
		[]batch.Record{b.deadLetterRecord("g", sp, dls[0])})
	if err := b.appendDeadLetter(ctx, dp, dcfg, data); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// The next node to serve it.
	b, err = Open(Config{DataDir: dir, Fsync: log.FsyncPolicy{Mode: log.FsyncNever}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Ready(Node{APIAddr: "127.0.0.1:1"})
	res, err := b.ShareFetch(ctx, ShareFetchRequest{Group: "g", Member: "m2", MaxRecords: 10,
		Partitions: []ShareFetchPartition{{SharePartition: SharePartition{Topic: "q"}}}})
	if err != nil || (len(res.Partitions) != 0 && len(res.Partitions[0].Acquired) != 0) {
		t.Fatalf("fetch after the restart: %+v %v; want nothing acquired", res, err)
	}
	fr, err := b.Fetch(ctx, FetchRequest{Partitions: []FetchPartition{{Topic: "q.dlq"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Release()
	if n := fr.Partitions[0].Records; n != 1 {
		t.Fatalf("q.dlq holds %d records after the retry, want 1", n)
	}
	d, err := b.DescribeShareGroup(ctx, "", "g")
	if err != nil || len(d.Partitions) != 1 || d.Partitions[0].Start != 1 {
		t.Fatalf("describe: %+v %v; want the window past 0", d, err)
	}
}

// A leader that stored a rejected record's DeadLettering state and died
// before appending its dead letter: the node that serves the share
// partition next appends it with the member's reason, which the stored
// state carries.
func TestShareDeadLetterReasonOutlivesTheLeader(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b, _, _ := rejectStored(t, dir, "no such customer")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b, err := Open(Config{DataDir: dir, Fsync: log.FsyncPolicy{Mode: log.FsyncNever}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Ready(Node{APIAddr: "127.0.0.1:1"})
	if _, err := b.ShareFetch(ctx, ShareFetchRequest{Group: "g", Member: "m2", MaxRecords: 10,
		Partitions: []ShareFetchPartition{{SharePartition: SharePartition{Topic: "q"}}}}); err != nil {
		t.Fatal(err)
	}
	fr, err := b.Fetch(ctx, FetchRequest{Partitions: []FetchPartition{{Topic: "q.dlq"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Release()
	var reasons []string
	err = batch.Split(fr.Partitions[0].Batches, func(bt []byte, _ batch.Info) error {
		_, recs, err := batch.Decode(bt, 0)
		for _, r := range recs {
			for _, h := range r.Headers {
				if h.Key == DLQHeaderError {
					reasons = append(reasons, string(h.Value))
				}
			}
		}
		return err
	})
	if err != nil || len(reasons) != 1 || reasons[0] != "no such customer" {
		t.Fatalf("q.dlq's %s headers: %q %v, want the member's reason once", DLQHeaderError, reasons, err)
	}
}

// rejectStored opens a node alone on dir with topic q holding one record,
// and stores group g's share state of q/0 in which that record was
// rejected (with reason, when not "") and waits for its dead-letter
// append: what a leader stores before it appends.
func rejectStored(t *testing.T, dir, reason string) (*Broker, *sharePart, *share.Partition) {
	t.Helper()
	ctx := context.Background()
	b, err := Open(Config{DataDir: dir, Fsync: log.FsyncPolicy{Mode: log.FsyncNever}})
	if err != nil {
		t.Fatal(err)
	}
	b.Ready(Node{APIAddr: "127.0.0.1:1"})
	if _, err := b.CreateTopic(ctx, "", partition.DefaultConfig("q")); err != nil {
		t.Fatal(err)
	}
	rec := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Value: []byte("poison")}})
	if _, err := b.Produce(ctx, ProduceRequest{Topic: "q", Batch: rec}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetShareGroupConfig(ctx, "", "g", map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		t.Fatal(err)
	}
	b.share.mu.Lock()
	g := b.shareGroupLocked("g")
	b.share.mu.Unlock()
	sp, err := b.sharePartition(g, SharePartition{Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := b.shareCurrent(ctx, g, sp); err != nil {
		t.Fatal(err)
	}
	q := sp.p.Clone()
	q.Acquire("m", 0, 1, 1, nil)
	var reasons map[int64]string
	if reason != "" {
		reasons = map[int64]string{0: reason}
	}
	if _, err := q.AcknowledgeWithReasons("m", 0, []share.Ack{{First: 0, Last: 0, Types: []share.AckType{share.Reject}}}, reasons); err != nil {
		t.Fatal(err)
	}
	if err := b.storeShare(ctx, g, sp, q); err != nil {
		t.Fatal(err)
	}
	return b, sp, q
}
