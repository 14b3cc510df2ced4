package broker

import (
	"context"
	"fmt"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/share"
)

// SetShareJitter replaces the redelivery backoff's random draw of the
// share partitions b loads from now on: f(n) returns an integer in [0, n].
func SetShareJitter(b *Broker, f func(n int64) int64) {
	b.share.mu.Lock()
	b.share.jitter = f
	b.share.mu.Unlock()
}

// DeadLetterUnarchived is a share partition's leader that acquires and
// rejects record offset of partition 0 of topic for group, stores the
// DeadLettering state, appends its dead letter and dies before archiving
// it: the stored state keeps the record DeadLettering with its sequence.
func DeadLetterUnarchived(ctx context.Context, b *Broker, group, topic string, offset int64) error {
	b.share.mu.Lock()
	g := b.shareGroupLocked(group)
	b.share.mu.Unlock()
	cfg, _ := b.shareConfigOf(g)
	sp, err := b.sharePartition(g, SharePartition{Topic: topic})
	if err != nil {
		return err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := b.shareCurrent(ctx, g, sp); err != nil {
		return err
	}
	q := sp.p.Clone()
	q.Acquire("m", 0, 1, offset+1, nil)
	if _, err := q.Acknowledge("m", 0, []share.Ack{{First: offset, Last: offset, Types: []share.AckType{share.Reject}}}); err != nil {
		return err
	}
	if err := b.storeShare(ctx, g, sp, q); err != nil {
		return err
	}
	dls := q.DeadLetters()
	if len(dls) != 1 {
		return fmt.Errorf("%d dead letters, want 1", len(dls))
	}
	src, err := b.topics.Config(topic)
	if err != nil {
		return err
	}
	dp, dcfg, err := b.deadLetterPartition(ctx, cfg.deadLetterTopic(topic), src, 0)
	if err != nil {
		return err
	}
	data := batch.Encode(nil, 0, batch.Producer{ID: shareWriterID(group, sp.ref, sp.created), Sequence: dls[0].Sequence},
		[]batch.Record{b.deadLetterRecord(group, sp, dls[0])})
	return b.appendDeadLetter(ctx, dp, dcfg, data)
}
