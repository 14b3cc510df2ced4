package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/partition"
)

var errUnproven = errors.New("no barrier of this term has committed yet")

// replayingPlane is the control plane of a node that leads a partition
// but has not yet proven its term, while its state machine still applies
// entries committed before it (a leader restarted with an old snapshot,
// or one elected before it learned the commit index): every read checked
// here sees one more entry applied meanwhile, and none can be confirmed
// current.
type replayingPlane struct {
	controlPlane
	apply func(*partition.Partition) // applies one more committed entry
}

// readable is the contract of controlPlane.readable: a fetch below the
// high watermark returns committed records and is served without a
// proof; one at the high watermark waits for the proof.
func (p *replayingPlane) readable(_ context.Context, part *partition.Partition, offset int64) error {
	p.apply(part)
	if offset < part.Log.HighWatermark() {
		return nil
	}
	return errUnproven
}

func (p *replayingPlane) current(_ context.Context, part *partition.Partition) error {
	p.apply(part)
	return errUnproven
}

// A read whose answer depends on the end of the log (a get, a
// compare-and-set's check, a list of the key-value view; the last stable
// offset; a leader epoch's end) is served only once the leader proves it
// current, however its high watermark moves meanwhile. Served on a high
// watermark that moved while the read was checked, a linearizable get
// answered a value two puts older than one acknowledged before it began:
// the leader, just restarted, was applying its predecessor's entries.
func TestReadsOfTheLogEndWaitForTheProof(t *testing.T) {
	ctx := context.Background()
	b := aloneBroker(t)
	cfg := partition.DefaultConfig("kv")
	cfg.Cleanup = partition.DefaultCleanup()
	cfg.Cleanup.Policy = partition.CleanupCompact
	if _, err := b.CreateTopic(ctx, "", cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := b.KVPut(ctx, "", "kv", KVPut{Key: []byte("k"), Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	b.plane = &replayingPlane{controlPlane: b.plane, apply: func(p *partition.Partition) {
		rec := batch.Record{Key: []byte("other"), Value: []byte("x")}
		if _, err := p.Log.Append(batch.Encode(nil, 0, batch.NoProducer, []batch.Record{rec})); err != nil {
			t.Error(err) // a list reads its partitions in goroutines
		}
	}}
	absent := KVAbsent
	reads := map[string]func() error{
		"get": func() error {
			_, _, err := b.KVGet(ctx, "", "kv", []byte("k"), KVGetOptions{})
			return err
		},
		"compare-and-set": func() error {
			_, err := b.KVPut(ctx, "", "kv", KVPut{Key: []byte("k"), Value: []byte("w"), Expected: &absent})
			return err
		},
		"list": func() error {
			_, err := b.KVList(ctx, "", "kv", KVListRequest{})
			return err
		},
		"last stable offset": func() error {
			_, err := b.LastStableOffset(ctx, "", "kv", 0)
			return err
		},
		"leader epoch end": func() error {
			_, _, err := b.EpochEnd(ctx, "", "kv", 0, 0)
			return err
		},
	}
	for name, read := range reads {
		if err := read(); !errors.Is(err, errUnproven) {
			t.Errorf("%s: answered %v before the leader proved it current", name, err)
		}
	}
}
