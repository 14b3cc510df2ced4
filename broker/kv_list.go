package broker

import (
	"bytes"
	"context"
	"slices"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/fanout"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/kv"
)

// kvListBytes bounds the values of one partition's share of a page: a
// share passed on from a leader must fit the peer service's frame.
const kvListBytes = 1 << 20

// kvListParallel bounds the partitions a list reads at once.
const kvListParallel = 16

// KVListRequest asks for a page of a compacted topic's keys.
type KVListRequest struct {
	// Prefix: only keys that start with it (nil: every key).
	Prefix []byte `json:"prefix,omitempty"`
	// After: only keys that sort after it (nil: from the first); the
	// last key of a page asks for the next one.
	After []byte `json:"after,omitempty"`
	// Limit: at most this many records (0: 100; at most KVListMax).
	Limit int `json:"limit,omitempty"`
	// Stale reads each partition's replica on this node unproven, as
	// KVGetOptions.Stale.
	Stale bool `json:"stale,omitempty"`
}

// KVPage is a page of keys with their newest records, in key order
// (bytewise) across the topic's partitions. More says keys may be left
// past Last, the last key the page covers: the next page is asked with
// After = Last.
type KVPage struct {
	Records []KVRecord `json:"records"`
	More    bool       `json:"more,omitempty"`
	Last    []byte     `json:"last,omitempty"`
}

// KVList returns a page of topic's keys with their newest records, each
// partition read as KVGet reads it (current on its leader unless stale);
// a partition another node leads is answered with its *NotLeaderError
// (Forwarder.KVList reads it there).
func (b *Broker) KVList(ctx context.Context, pr Principal, topic string, r KVListRequest) (KVPage, error) {
	return b.kvList(ctx, pr, topic, r, func(ctx context.Context, part int32, r KVListRequest) (KVPage, error) {
		return b.kvListOne(ctx, topic, part, r)
	})
}

// kvList authorizes pr once, reads each partition's share with one and
// merges the shares into one page in key order.
func (b *Broker) kvList(ctx context.Context, pr Principal, topic string, r KVListRequest,
	one func(ctx context.Context, part int32, r KVListRequest) (KVPage, error)) (KVPage, error) {
	if err := b.Authorize(ctx, pr, auth.OpRead, auth.Topic(topic)); err != nil {
		return KVPage{}, err
	}
	switch {
	case r.Limit < 0 || r.Limit > KVListMax:
		return KVPage{}, kind.Errorf(kind.ErrInvalidArgument, "key-value list: limit %d: want 1 to %d (0: %d)", r.Limit, KVListMax, kvListDefault)
	case r.Limit == 0:
		r.Limit = kvListDefault
	}
	if err := b.enter(); err != nil {
		return KVPage{}, err
	}
	defer b.leave()
	_, parts, err := b.kvTopic(ctx, topic)
	if err != nil {
		return KVPage{}, err
	}
	pages := make([]KVPage, len(parts))
	errs := make([]error, len(parts))
	fanout.Run(ctx, len(parts), kvListParallel, func(ctx context.Context, i int) {
		pages[i], errs[i] = one(ctx, int32(i), r)
	})
	for _, err := range errs {
		if err != nil {
			return KVPage{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return KVPage{}, err
	}
	return mergeKVPages(pages, r.Limit), nil
}

// mergeKVPages merges the partitions' shares (each in key order) into one
// page of at most limit: a share that stopped short (More) knows nothing
// past its last key, so the page ends there.
func mergeKVPages(pages []KVPage, limit int) KVPage {
	var all []KVRecord
	var cut []byte // the smallest last key of a share that stopped short
	more := false
	for _, p := range pages {
		all = append(all, p.Records...)
		if p.More {
			more = true
			if cut == nil || bytes.Compare(p.Last, cut) < 0 {
				cut = p.Last
			}
		}
	}
	slices.SortFunc(all, func(a, b KVRecord) int { return bytes.Compare(a.Key, b.Key) })
	if cut != nil {
		n, found := slices.BinarySearchFunc(all, cut, func(r KVRecord, k []byte) int { return bytes.Compare(r.Key, k) })
		if found {
			n++
		}
		all = all[:n]
	}
	if len(all) > limit {
		all, more = all[:limit], true
	}
	page := KVPage{Records: all, More: more}
	switch {
	case len(all) > 0:
		page.Last = all[len(all)-1].Key
	case more:
		page.Last = cut
	}
	return page
}

// kvListOne is one partition's share of a page, read here.
func (b *Broker) kvListOne(ctx context.Context, topic string, part int32, r KVListRequest) (KVPage, error) {
	cfg, parts, err := b.kvTopic(ctx, topic)
	if err != nil {
		return KVPage{}, err
	}
	if part < 0 || int(part) >= len(parts) {
		return KVPage{}, partitionRange(topic, cfg.Partitions, part)
	}
	p := parts[part]
	if err := b.kvReadable(ctx, cfg, p, r.Stale); err != nil {
		return KVPage{}, err
	}
	kp := kvPart(cfg, p)
	entries, more, err := b.kv.index.List(kp, r.Prefix, r.After, r.Limit)
	if err != nil {
		return KVPage{}, err
	}
	page := KVPage{More: more}
	if len(entries) > 0 {
		page.Last = entries[len(entries)-1].Key
	}
	size := 0
	for i, e := range entries {
		if size >= kvListBytes {
			page.More, page.Last = true, entries[i-1].Key
			break
		}
		rec, found, err := kv.ReadRecord(p.Log, e.Offset)
		if err == nil && (!found || !bytes.Equal(rec.Key, e.Key)) {
			// The cleaner removed it for a newer record past what the
			// index read, or retention removed it: Get catches up again.
			rec, found, err = b.kv.index.Get(kp, e.Key)
		}
		if err != nil {
			return KVPage{}, err
		}
		if found {
			page.Records = append(page.Records, kvRecord(p.ID, rec))
			size += len(rec.Key) + len(rec.Value)
		}
	}
	return page, nil
}
