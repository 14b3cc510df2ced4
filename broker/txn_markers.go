package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/fanout"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/txn"
)

// opTxnMarker writes a transaction marker on the partition's leader; the
// name is part of the peer protocol.
const opTxnMarker = "txn.marker"

type markerReq struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Producer  int64  `json:"producer"`
	Epoch     int16  `json:"epoch"`
	// Txn is the transaction's number (txn.Record.Txn), in the marker's
	// coordinator-epoch field: partition applies one marker per number.
	Txn    int32 `json:"txn,omitempty"`
	Commit bool  `json:"commit"`
}

// markerFanout bounds the markers one transaction writes at once.
const markerFanout = 16

// txnWriter is the coordinator's Writer: markers through each
// partition's produce path, offsets through the control plane. The
// offsets of a coordinator whose term is gone are refused, as its
// records are (txnStore): a transaction it commits again (another
// leader's coordinator did) must not move a group's offsets back. Its
// markers are harmless (a partition applies one per transaction).
type txnWriter struct{ st txnStore }

// WriteMarkers writes the marker to every partition at once (up to
// markerFanout), each on its leader; the first error is returned, after
// every write ended.
func (w txnWriter) WriteMarkers(ctx context.Context, m txn.Marker, parts []txn.TopicPartition) error {
	var mu sync.Mutex
	var first error
	fanout.Run(ctx, len(parts), markerFanout, func(ctx context.Context, i int) {
		r := markerReq{Topic: parts[i].Topic, Partition: parts[i].Partition, Producer: m.ProducerID, Epoch: m.Epoch, Txn: m.Txn, Commit: m.Commit}
		if err := w.st.b.writeMarker(ctx, r); err != nil {
			mu.Lock()
			first = cmpErr(first, err)
			mu.Unlock()
		}
	})
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// CommitOffsets commits a transaction's offsets for a group.
func (w txnWriter) CommitOffsets(ctx context.Context, group string, offs []txn.Offset) error {
	if err := w.st.current(); err != nil {
		return err
	}
	cs := make([]offsets.Committed, len(offs))
	for i, o := range offs {
		cs[i] = offsets.Committed{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Metadata: o.Metadata}
	}
	return w.st.b.plane.commitOffsets(ctx, group, cs)
}

// writeMarker appends a marker on the partition's leader: here, or over
// the peer service on the node this one names. A deleted topic's
// partition needs none.
func (b *Broker) writeMarker(ctx context.Context, r markerReq) error {
	wait := markerRetry
	deadline := time.Now().Add(markerRetryFor)
	for {
		err := b.appendMarker(ctx, r)
		if addr, ok := passOn(ctx, err); ok {
			err = b.peerCall(ctx, addr, opTxnMarker, "", r, nil)
		}
		if err == nil || errors.Is(err, ErrUnknownTopic) || errors.Is(err, ErrUnknownPartition) {
			return nil
		}
		// A partition asleep, electing, or whose leader moved: again,
		// until markerRetryFor (then the coordinator's next tick).
		if time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// A marker write that fails is tried again after markerRetry, then twice
// as long each time, for markerRetryFor.
const (
	markerRetry    = 20 * time.Millisecond
	markerRetryFor = 5 * time.Second
)

// appendMarker makes the marker's control batch and appends it through
// the produce path (acks all): replicated like any batch. It authorizes
// nothing: only the coordinator (here, or on another node of the
// cluster) asks for it.
func (b *Broker) appendMarker(ctx context.Context, r markerReq) error {
	if err := b.enter(); err != nil {
		return err
	}
	p, cfg, err := b.producePartitionOf(ctx, ProduceRequest{Topic: r.Topic, Partition: r.Partition})
	if err != nil {
		b.leave()
		return err
	}
	enc := batch.EncodeControl(nil, batch.Producer{ID: r.Producer, Epoch: r.Epoch}, r.Commit, r.Txn, time.Now().UnixMilli())
	c, err := batch.CheckControl(enc)
	var f *produceFuture
	if err == nil {
		f, err = b.startChecked(ctx, p, cfg, c, AcksAll, -1, 0)
	}
	if err != nil {
		b.leave()
		return err
	}
	_, err = f.Wait()
	return err
}

// handleTxnPeers registers the transaction operations another node's
// coordinator makes of this one.
func (b *Broker) handleTxnPeers() {
	handle(b, opTxnMarker, func(ctx context.Context, _ Principal, r markerReq) (any, error) {
		return none{}, b.appendMarker(ctx, r)
	})
	b.handleTxnVerify()       // txn_verify.go
	b.handleTxnNativePeers()  // txn_native_forward.go
	b.handleLastStablePeers() // txn_native.go
}

// LastStableOffset is a partition's last stable offset, on its leader
// (ListOffsets latest under read_committed).
func (b *Broker) LastStableOffset(ctx context.Context, pr Principal, topic string, part int32) (int64, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Topic(topic)); err != nil {
		return 0, err
	}
	p, err := b.topics.Partition(topic, part)
	if err != nil {
		return 0, b.topicLookup(ctx, topic, err)
	}
	if err := b.plane.current(ctx, p); err != nil {
		return 0, err
	}
	return p.LastStable(), nil
}

// AbortedTxn is an aborted transaction's span in a partition (a
// read_committed fetch lists those its records may hold).
type AbortedTxn = partition.AbortedTxn

// readCommitted cuts a read at the partition's last stable offset and
// lists the aborted transactions of what remains (a read_committed
// fetch).
func readCommitted(p *partition.Partition, offset int64, fp *FetchedPartition) error {
	lso := p.LastStable()
	fp.LastStable = lso
	if len(fp.Batches) == 0 {
		return nil
	}
	from := offset
	cut, records, next := 0, 0, offset
	err := batch.Split(fp.Batches, func(one []byte, info batch.Info) error {
		if info.BaseOffset >= lso {
			return errStop
		}
		if cut == 0 {
			from = info.BaseOffset
		}
		cut += len(one)
		records += int(info.NumRecords)
		next = info.NextOffset()
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if cut == 0 {
		fp.Batches, fp.Records, fp.NextOffset = fp.Batches[:0], 0, offset
		return nil
	}
	fp.Batches, fp.Records, fp.NextOffset = fp.Batches[:cut], records, next
	fp.Aborted = p.Aborted(from, next)
	return nil
}

var errStop = errors.New("stop")
