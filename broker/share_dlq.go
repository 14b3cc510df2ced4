package broker

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/routing"
	"github.com/logd/logd/share"
)

// Dead-letter topics (docs/queues.md#dead-letter-topics). A record a
// member rejects, or one out of deliveries, is made DeadLettering in its
// share partition's state (package share), stored, then appended here to
// the group's dead-letter topic, then archived and stored again. The
// append is idempotent: its batch is written by the share partition's own
// producer id (shareWriterID) at the record's dead-letter sequence, which
// the stored state holds, so an append retried after a crash or by a
// new leader is a duplicate the dead-letter partition does not store
// again. A record stays DeadLettering (never acquired, holding the
// window's start) until its append succeeds; each operation of the share
// partition retries it.
//
// In a cluster the share partition is served by its partition's leader,
// and the dead-letter partition may be led by another node: the append
// goes there over the peer service as a produce passed on to a leader
// does (opProduce, marked as a dead letter: the node asked authorizes
// nothing for it, as for a transaction marker, since only a node of the
// cluster can make a peer call and no client request carries the mark).
// The dead-letter topic is created as this node's own creation, on the
// metadata leader in a cluster (peerCreateTopic without a principal).

// Dead-letter headers: where the record came from and why.
const (
	DLQHeaderTopic     = "logd.dlq.topic"
	DLQHeaderPartition = "logd.dlq.partition"
	DLQHeaderOffset    = "logd.dlq.offset"
	DLQHeaderTimestamp = "logd.dlq.timestamp" // the source record's, Unix ms
	DLQHeaderGroup     = "logd.dlq.group"
	DLQHeaderCount     = "logd.dlq.delivery.count"
	DLQHeaderError     = "logd.dlq.error" // the member's last error, when it gave one
	DLQHeaderMissing   = "logd.dlq.missing"
)

// MaxShareReasonBytes bounds the reason a member gives for a record it
// rejects (ShareFetchPartition.Reasons), which its dead letter carries as
// DLQHeaderError: a longer one is cut to its first MaxShareReasonBytes
// bytes, at a UTF-8 character boundary, rather than the acknowledgement
// refused (the reason is a diagnostic; the rejection is what matters).
const MaxShareReasonBytes = 1024

// boundReasons is reasons with each one cut to MaxShareReasonBytes (the
// map itself when none is longer).
func boundReasons(reasons map[int64]string) map[int64]string {
	var out map[int64]string
	for o, r := range reasons {
		if len(r) <= MaxShareReasonBytes {
			continue
		}
		if out == nil {
			out = maps.Clone(reasons)
		}
		cut := MaxShareReasonBytes
		for cut > 0 && !utf8.RuneStart(r[cut]) {
			cut--
		}
		out[o] = r[:cut]
	}
	if out == nil {
		return reasons
	}
	return out
}

// sharePartConfig is a share partition's settings under the group's
// configs on this node.
func (b *Broker) sharePartConfig(c ShareGroupConfig) share.Config {
	sc := c.partitionConfig()
	sc.DeadLetter = !c.DeadLetterOff
	return sc
}

// shareWriterID is the producer id of a share partition's dead-letter
// appends: derived from the group, the source partition and the topic's
// incarnation, so every node and every restart uses the same, in a range
// (2^62 and up) the producer-id allocator does not reach.
func shareWriterID(group string, ref SharePartition, created int64) int64 {
	h := sha256.New()
	h.Write([]byte("logd dlq writer\x00"))
	h.Write([]byte(group))
	h.Write([]byte{0})
	h.Write([]byte(ref.Topic))
	var b [12]byte
	binary.BigEndian.PutUint32(b[:4], uint32(ref.Partition))
	binary.BigEndian.PutUint64(b[4:], uint64(created))
	h.Write(b[:])
	return 1<<62 | int64(binary.BigEndian.Uint64(h.Sum(nil))&(1<<62-1))
}

// shareDeadLetters appends sp's dead letters (after expiring its locks at
// now) and archives them, each step durable before the next. A failure
// leaves the rest DeadLettering, for the next operation to retry; it is
// logged, not returned (the member's request does not depend on it).
// sp.mu is held.
func (b *Broker) shareDeadLetters(ctx context.Context, g *shareGroup, sp *sharePart, now int64) {
	sp.p.Expire(now)
	dls := sp.p.DeadLetters()
	if len(dls) == 0 {
		return
	}
	if err := b.deadLetter(ctx, g, sp, dls); err != nil {
		b.logger.Warn("share group: dead letters not appended yet: retried at the next fetch or acknowledgement",
			"group", g.name, "topic", sp.ref.Topic, "partition", sp.ref.Partition, "pending", len(dls), "err", err)
	}
}

func (b *Broker) deadLetter(ctx context.Context, g *shareGroup, sp *sharePart, dls []share.DeadLetter) error {
	// The sequences are durable before any append uses one.
	if err := b.storeShare(ctx, g, sp, sp.p); err != nil {
		return err
	}
	cfg, _ := b.shareConfigOf(g)
	src, err := b.topics.Config(sp.ref.Topic)
	if err != nil {
		return err
	}
	q := sp.p.Clone()
	name := cfg.deadLetterTopic(sp.ref.Topic)
	if err := routing.ValidateTopicName(name); err != nil {
		// TOPIC.dlq is no topic name (TOPIC is as long as a name may be):
		// archived, as without a dead-letter topic, rather than held
		// forever.
		b.logger.Warn("share group: no dead-letter topic can be named for this topic: its dead letters are archived (set share.dlq.topic)",
			"group", g.name, "topic", sp.ref.Topic, "err", err)
		for _, d := range dls {
			if err := q.DeadLettered(d.Offset); err != nil {
				return err
			}
		}
		return b.storeShare(ctx, g, sp, q)
	}
	dp, dcfg, err := b.deadLetterPartition(ctx, name, src, sp.ref.Partition)
	if err != nil {
		return err
	}
	id := shareWriterID(g.name, sp.ref, sp.created)
	var failed error
	for _, d := range dls {
		rec := b.deadLetterRecord(g.name, sp, d)
		data := batch.Encode(nil, 0, batch.Producer{ID: id, Epoch: 0, Sequence: d.Sequence}, []batch.Record{rec})
		if failed = b.appendDeadLetter(ctx, dp, dcfg, data); failed != nil {
			break
		}
		if err := q.DeadLettered(d.Offset); err != nil {
			return err
		}
	}
	if err := b.storeShare(ctx, g, sp, q); err != nil {
		return err
	}
	sp.signal()
	return failed
}

// deadLetterPartition is the dead-letter topic's partition for source
// partition part, the topic created on first use with the source's
// partitions, replicas and retention.
func (b *Broker) deadLetterPartition(ctx context.Context, name string, src partition.TopicConfig, part int32) (*partition.Partition, partition.TopicConfig, error) {
	cfg, parts, err := b.topics.Partitions(name)
	if err != nil {
		nc := partition.DefaultConfig(name)
		nc.Partitions, nc.Replicas = src.Partitions, src.Replicas
		nc.RetentionMs, nc.RetentionBytes, nc.RetentionRecords = src.RetentionMs, src.RetentionBytes, src.RetentionRecords
		// No principal: this node's own creation, here alone, on the
		// metadata leader in a cluster (peerCreateTopic).
		if _, err := b.plane.createTopic(ctx, "", nc); err != nil && !errors.Is(err, partition.ErrTopicExists) {
			return nil, cfg, fmt.Errorf("create dead-letter topic %q: %w", name, err)
		}
		if cfg, parts, err = b.topics.Partitions(name); err != nil {
			return nil, cfg, err
		}
	}
	if len(parts) == 0 {
		return nil, cfg, fmt.Errorf("dead-letter topic %q has no partitions", name)
	}
	return parts[int(part)%len(parts)], cfg, nil
}

// deadLetterRecord is d's record in the dead-letter topic: the source
// record's key, value and headers, and the headers of its origin. A
// record no longer in the source (trimmed, compacted) is dead-lettered
// with the headers only, so no sequence is skipped.
func (b *Broker) deadLetterRecord(group string, sp *sharePart, d share.DeadLetter) batch.Record {
	rec := batch.Record{Timestamp: time.Now().UnixMilli()}
	src, ok := b.sourceRecord(sp.part, d.Offset)
	if ok {
		rec.Key, rec.Value, rec.Headers = src.Key, src.Value, append(rec.Headers, src.Headers...)
	}
	h := func(k, v string) { rec.Headers = append(rec.Headers, batch.Header{Key: k, Value: []byte(v)}) }
	h(DLQHeaderTopic, sp.ref.Topic)
	h(DLQHeaderPartition, strconv.Itoa(int(sp.ref.Partition)))
	h(DLQHeaderOffset, strconv.FormatInt(d.Offset, 10))
	if ok {
		h(DLQHeaderTimestamp, strconv.FormatInt(src.Timestamp, 10))
	} else {
		h(DLQHeaderMissing, "true")
	}
	h(DLQHeaderGroup, group)
	h(DLQHeaderCount, strconv.Itoa(int(d.DeliveryCount)))
	if d.Reason != "" {
		h(DLQHeaderError, d.Reason)
	}
	return rec
}

// sourceRecord reads the record at offset o of p.
func (b *Broker) sourceRecord(p *partition.Partition, o int64) (batch.Record, bool) {
	fp, err := b.readAt(p, o, 1, nil)
	if err != nil {
		return batch.Record{}, false
	}
	var found batch.Record
	ok := false
	_ = batch.Split(fp.Batches, func(one []byte, info batch.Info) error {
		if ok || info.NextOffset() <= o {
			return nil
		}
		_, recs, err := batch.Decode(one, o)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.Offset == o {
				found, ok = r, true
			}
		}
		return nil
	})
	return found, ok
}

// appendDeadLetter appends one dead-letter batch (acks all) on the
// dead-letter partition's leader: here, or over the peer service on the
// node this one names. A duplicate of one stored before is success.
func (b *Broker) appendDeadLetter(ctx context.Context, p *partition.Partition, cfg partition.TopicConfig, data []byte) error {
	err := b.appendDeadLetterHere(ctx, p, cfg, data)
	if addr, ok := passOn(ctx, err); ok {
		err = b.peerCall(ctx, addr, opProduce, "",
			produceReq{Topic: p.Topic, Partition: p.ID, Batch: data, Acks: AcksAll, DeadLetter: true}, nil)
	}
	return err
}

// appendDeadLetterHere appends one dead-letter batch (acks all) to p on
// this node; it authorizes nothing (the share partition's leader, here or
// on another node, asks for it). A sleeping partition it woke is waited
// for once, as Produce does.
func (b *Broker) appendDeadLetterHere(ctx context.Context, p *partition.Partition, cfg partition.TopicConfig, data []byte) error {
	err := b.appendDeadLetterOnce(ctx, p, cfg, data)
	var nl *NotLeaderError
	if errors.As(err, &nl) && nl.Woke {
		b.plane.awaitLeader(ctx, p, wokeWait)
		err = b.appendDeadLetterOnce(ctx, p, cfg, data)
	}
	return err
}

func (b *Broker) appendDeadLetterOnce(ctx context.Context, p *partition.Partition, cfg partition.TopicConfig, data []byte) error {
	if err := b.enter(); err != nil {
		return err
	}
	f, err := b.startAppend(ctx, p, cfg, ProduceRequest{Batch: data, Acks: AcksAll})
	if err != nil {
		b.leave()
		return err
	}
	_, err = f.Wait()
	return err
}

// peerDeadLetter is a dead-letter append another node's share partition
// passed on to this node (appendDeadLetter).
func (b *Broker) peerDeadLetter(ctx context.Context, r produceReq) (any, error) {
	p, cfg, err := b.producePartitionOf(ctx, ProduceRequest{Topic: r.Topic, Partition: r.Partition})
	if err != nil {
		return nil, err
	}
	return none{}, b.appendDeadLetterHere(ctx, p, cfg, r.Batch)
}
