package broker_test

import (
	"context"
	"slices"
	"testing"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

func acquiredOffsets(res broker.ShareFetchResult) []int64 {
	var out []int64
	for _, r := range acquired(res) {
		for o := r.First; o <= r.Last; o++ {
			out = append(out, o)
		}
	}
	return out
}

// With share.key.ordering a record is handed out only once every earlier
// record of its key is done: another member gets the other keys' records
// meanwhile, a released record comes again before the next of its key,
// and after a restart (locks and keys gone) the node reads the keys of
// the records in flight from the log before it hands any out.
func TestShareKeyOrdering(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	openAt := func() *broker.Broker {
		b, err := broker.Open(broker.Config{DataDir: dir, Fsync: log.FsyncPolicy{Mode: log.FsyncNever}})
		if err != nil {
			t.Fatal(err)
		}
		b.Ready(broker.Node{APIAddr: "127.0.0.1:1"})
		return b
	}
	b := openAt()
	defer func() { b.Close() }()
	createTopic(t, b, "q", 1)
	var recs []batch.Record
	for _, k := range []string{"A", "A", "B", "", "A", "C"} { // offsets 0..5
		r := batch.Record{Value: []byte("v")}
		if k != "" {
			r.Key = []byte(k)
		}
		recs = append(recs, r)
	}
	if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "q", Batch: batch.Encode(nil, 0, batch.NoProducer, recs)}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetShareGroupConfig(ctx, "", "g", map[string]string{"share.auto.offset.reset": "earliest", "share.key.ordering": "true"}); err != nil {
		t.Fatal(err)
	}
	if got := acquiredOffsets(shareFetch(t, b, "m1", 0)); !slices.Equal(got, []int64{0, 2, 3, 5}) {
		t.Fatalf("m1 got %v, want 0 2 3 5: one record of A, B and C each and the keyless one", got)
	}
	if got := acquiredOffsets(shareFetch(t, b, "m2", 0)); len(got) != 0 {
		t.Fatalf("m2 got %v while A's first record is held", got)
	}
	// m1 releases 0 and accepts the others: 0 comes again, before 1.
	res := shareFetch(t, b, "m1", 1, broker.ShareAck{First: 0, Last: 0, Types: []broker.ShareAckType{2}},
		broker.ShareAck{First: 2, Last: 3, Types: []broker.ShareAckType{1}}, broker.ShareAck{First: 5, Last: 5, Types: []broker.ShareAckType{1}})
	if got := acquired(res); len(got) != 1 || got[0] != (broker.ShareRange{First: 0, Last: 0, DeliveryCount: 2}) {
		t.Fatalf("after 0's release m1 got %+v, want 0 again with count 2", got)
	}
	if got := acquiredOffsets(shareFetch(t, b, "m1", 2, broker.ShareAck{First: 0, Last: 0, Types: []broker.ShareAckType{1}})); !slices.Equal(got, []int64{1}) {
		t.Fatalf("after 0 is accepted m1 got %v, want 1 (4 waits for it)", got)
	}

	// A restart: 1 is available again, its key unknown until read.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openAt()
	if got := acquiredOffsets(shareFetch(t, b, "m3", 0)); !slices.Equal(got, []int64{1}) {
		t.Fatalf("after a restart m3 got %v, want 1 alone (4 waits for it)", got)
	}
	if err := b.SetShareGroupConfig(ctx, "", "g", map[string]string{"share.key.ordering": "false"}); err != nil {
		t.Fatal(err)
	}
	if got := acquiredOffsets(shareFetch(t, b, "m4", 0)); !slices.Equal(got, []int64{4}) {
		t.Fatalf("with ordering off m4 got %v, want 4 at once", got)
	}
	if err := b.SetShareGroupConfig(ctx, "", "g", map[string]string{"share.key.ordering": "maybe"}); err == nil {
		t.Fatal("share.key.ordering=maybe was taken")
	}
}
