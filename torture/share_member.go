package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newMember is a share member's franz-go client: it fetches only when
// polled, a few records at a time (ShareMaxRecordsStrict), so that what
// the broker hands out is what the poll returns and no record sits
// acquired in a buffer unseen.
func (sw *ShareWorkload) newMember(rng *rand.Rand, cn *cutNet, col *ackCollector) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(sw.w.kafkaAddrs(rng.IntN(sw.w.cluster.Size()))...),
		kgo.ShareGroup(sw.cfg.Group), kgo.ConsumeTopics(sw.cfg.Topic),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.ShareMaxRecords(8), kgo.ShareMaxRecordsStrict(),
		kgo.ShareAckCallback(col.add), kgo.Dialer(cn.dial), kgo.DialTimeout(2*time.Second),
		kgo.RetryTimeout(5*time.Second), kgo.MetadataMinAge(250*time.Millisecond))
}

// member runs one life of a member until ctx ends, it crashes or closes.
// A drain member accepts every record and never fails.
func (sw *ShareWorkload) member(ctx context.Context, rng *rand.Rand, name string, drain bool) {
	cn, col := &cutNet{}, &ackCollector{}
	cl, err := sw.newMember(rng, cn, col)
	if err != nil {
		sw.w.cfg.Logf("share member %s: %v", name, err)
		sleep(ctx, time.Second)
		return
	}
	defer cl.Close() // releases what it holds, unless it crashed
	for ctx.Err() == nil {
		recs := sw.poll(ctx, cl, name, drain)
		if len(recs) == 0 {
			continue
		}
		if !drain {
			switch roll := rng.IntN(100); {
			case roll < 3: // a crash: what it holds stays locked until the locks expire
				cn.crash()
				sw.record(func(h *ShareHistory) { h.Crashes++ })
				return
			case roll < 5: // a close: Close releases what it holds
				return
			case roll < 9: // a stall: its locks expire before it answers
				sleep(ctx, sw.cfg.LockDuration+time.Second)
			}
		}
		if !sw.flush(cl, col, name, sw.decide(rng, cl, recs, drain)) {
			return // results that come late must not be taken for the next flush's
		}
	}
}

// poll polls once and records what it returned.
func (sw *ShareWorkload) poll(ctx context.Context, cl *kgo.Client, name string, final bool) []*kgo.Record {
	invoke := sw.w.h.Now()
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	fs := cl.PollFetches(pctx)
	cancel()
	sw.pollErrors(fs, final)
	recs := fs.Records()
	if len(recs) == 0 {
		return nil
	}
	t := sw.w.h.Now()
	sw.last.Store(time.Now().UnixNano())
	ds := make([]ShareDelivery, 0, len(recs))
	for _, r := range recs {
		ds = append(ds, ShareDelivery{Member: name, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value),
			Count: r.DeliveryCount(), Invoke: invoke, Time: t, Final: final})
	}
	sw.record(func(h *ShareHistory) { h.Deliveries = append(h.Deliveries, ds...) })
	return recs
}

// pollErrors counts the errors of a poll, other than its own deadline.
func (sw *ShareWorkload) pollErrors(fs kgo.Fetches, final bool) {
	kind := "run"
	if final {
		kind = "drain"
	}
	fs.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		msg := fmt.Sprintf("%s %s/%d: %s", kind, topic, p, digits.ReplaceAllString(err.Error(), "N"))
		sw.record(func(h *ShareHistory) {
			if h.PollErrors == nil {
				h.PollErrors = map[string]int{}
			}
			h.PollErrors[msg]++
		})
	})
}

// decide marks each record accepted (three in four), released or
// rejected; a drain accepts them all.
func (sw *ShareWorkload) decide(rng *rand.Rand, cl *kgo.Client, recs []*kgo.Record, drain bool) map[int32][]ShareAckEntry {
	out := map[int32][]ShareAckEntry{}
	for _, r := range recs {
		st, typ := kgo.AckAccept, ShareAccept
		if roll := rng.IntN(100); !drain && roll >= 88 {
			st, typ = kgo.AckReject, ShareReject
		} else if !drain && roll >= 75 {
			st, typ = kgo.AckRelease, ShareRelease
		}
		cl.MarkAcks(st, r)
		out[r.Partition] = append(out[r.Partition], ShareAckEntry{Offset: r.Offset, Count: r.DeliveryCount(), Type: typ})
	}
	return out
}

// flush sends the marked acknowledgements and records, per partition,
// what the broker answered; false when the flush did not finish.
func (sw *ShareWorkload) flush(cl *kgo.Client, col *ackCollector, name string, entries map[int32][]ShareAckEntry) bool {
	col.take()
	invoke := sw.w.h.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := cl.FlushAcks(ctx)
	cancel()
	complete := sw.w.h.Now()
	rs := col.take()
	acks := make([]ShareAck, 0, len(entries))
	for p, es := range entries {
		a := ShareAck{Member: name, Partition: p, Entries: es, Invoke: invoke, Complete: complete}
		a.Outcome, a.Err = shareAckOutcome(rs, sw.cfg.Topic, p)
		acks = append(acks, a)
	}
	sw.record(func(h *ShareHistory) { h.Acks = append(h.Acks, acks...) })
	return err == nil
}

// shareAckOutcome is what rs say of partition p's acknowledgements: all
// answered applied (OK), all refused as records the member did not hold
// (Fail: a partition's acknowledgements apply all or none; franz-go sends
// a request again after an error, so a refusal may follow a copy that was
// applied), else unknown.
func shareAckOutcome(rs kgo.ShareAckResults, topic string, p int32) (Outcome, string) {
	var errs []error
	n := 0
	for _, r := range rs {
		if r.Topic != topic || r.Partition != p {
			continue
		}
		n++
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	switch {
	case n == 0:
		return OutcomeUnknown, "no result"
	case len(errs) == 0:
		return OutcomeOK, ""
	case len(errs) == n && !slices.ContainsFunc(errs, func(e error) bool { return !errors.Is(e, kerr.InvalidRecordState) }):
		return OutcomeFail, errs[0].Error()
	}
	return OutcomeUnknown, errs[0].Error()
}
