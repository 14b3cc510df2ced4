package main

// The -redelivery mode: how long a released record waits before it is
// delivered again, against the group's share.redelivery.backoff.* configs.
//
// It produces N records to a new one-partition topic, then runs two share
// groups over it, one after the other: one with the backoff given (base,
// max) and one with the backoff off (base 0), the floor. Each group's
// delivery limit is releases + 1; its members release every record they
// poll until its delivery count is releases + 1, and accept it then. For
// each record and each delivery n it releases, the time from the moment
// the request carrying the release is handed to the member's connection
// (ShareFetch or ShareAcknowledge, read from the bytes kgo writes) to the
// poll that returns the record's delivery n + 1. The broker releases it on
// receipt, so the time includes the request's trip and the durable write
// of the release, the backoff, and the fetch that acquires it again.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// redeliveryRun is one share group's run over the records.
type redeliveryRun struct {
	name          string
	baseMs, maxMs int64 // baseMs 0: no backoff
	clock         *releaseClock
	secs          float64
}

func redelivery(ctx context.Context, seeds []string, n, size, members, releases, fetchMax int, baseMs, maxMs int64) error {
	if releases < 1 || releases > 9 {
		return fmt.Errorf("-releases is 1 to 9 (share.delivery.attempt.limit is at most 10), not %d", releases)
	}
	stamp := time.Now().UnixNano()
	topic := fmt.Sprintf("redelivery-%d", stamp)
	if err := produce(ctx, seeds, topic, n, make([]byte, size)); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	runs := []*redeliveryRun{
		{name: fmt.Sprintf("base %d ms, max %d ms", baseMs, maxMs), baseMs: baseMs, maxMs: maxMs},
		{name: "off (base 0)"},
	}
	for i, r := range runs {
		group := fmt.Sprintf("redelivery-%d-%d", i, stamp)
		cfg := map[string]string{
			"share.auto.offset.reset":          "earliest",
			"share.delivery.attempt.limit":     strconv.Itoa(releases + 1),
			"share.redelivery.backoff.base.ms": strconv.FormatInt(r.baseMs, 10),
		}
		if r.maxMs > 0 {
			cfg["share.redelivery.backoff.max.ms"] = strconv.FormatInt(r.maxMs, 10)
		}
		if err := groupConfig(ctx, seeds, group, cfg); err != nil {
			return fmt.Errorf("group config: %w", err)
		}
		r.clock = newReleaseClock(releases)
		start := time.Now()
		if err := releaseAll(ctx, seeds, topic, group, n, members, releases, fetchMax, r.clock); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		r.secs = time.Since(start).Seconds()
	}
	fmt.Printf("%d records of %d B on one partition, %d member(s) acquiring up to %d records a fetch; each record released after deliveries 1-%d and accepted at %d.\n",
		n, size, members, fetchMax, releases, releases+1)
	fmt.Println("Time from the release's request being handed to the connection to the poll that returns the record again, ms:")
	fmt.Println()
	fmt.Println("| backoff | released after delivery n | window [0, w] ms | expected mean ms | samples | p50 | mean | p99 | max | mean / expected | mean - expected |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range runs {
		for d := 1; d <= releases; d++ {
			w := backoffCeiling(r.baseMs, r.maxMs, d)
			s := r.clock.stats(d)
			ratio := "-"
			if w > 0 {
				ratio = fmt.Sprintf("%.2f", s.mean/(float64(w)/2))
			}
			fmt.Printf("| %s | %d | %d | %.1f | %d | %.1f | %.1f | %.1f | %.1f | %s | %.1f |\n",
				r.name, d, w, float64(w)/2, s.n, s.p50, s.mean, s.p99, s.max, ratio, s.mean-float64(w)/2)
		}
	}
	fmt.Println()
	for _, r := range runs {
		fmt.Printf("%s: %.1f s; deliveries after a release not seen on the wire: %d; wire requests not decoded: %d\n",
			r.name, r.secs, r.clock.unmatched.Load(), r.clock.undecoded.Load())
	}
	return nil
}

// backoffCeiling is w of the delay drawn after delivery n: min(max,
// base * 2^(n-1)), as share.Partition.backoff computes it; the broker
// draws uniformly from the integers 0..w, so the expected delay is w/2.
func backoffCeiling(baseMs, maxMs int64, n int) int64 {
	if baseMs <= 0 {
		return 0
	}
	d := baseMs
	for i := 1; i < n && d < maxMs; i++ {
		d *= 2
	}
	return min(d, maxMs)
}

// releaseAll reads topic's n records in share group of m members, each
// acquiring up to fetchMax records a fetch, releasing each record until its
// delivery count passes releases and accepting it then, until every record
// is accepted.
func releaseAll(ctx context.Context, seeds []string, topic, group string, n, m, releases, fetchMax int, clock *releaseClock) error {
	dial := func(ctx context.Context, network, host string) (net.Conn, error) {
		c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		return &wireConn{Conn: c, clock: clock}, nil
	}
	cls := make([]*kgo.Client, m)
	for i := range cls {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.Dialer(dial),
			kgo.ShareMaxRecords(int32(fetchMax)), kgo.ShareMaxRecordsStrict())
		if err != nil {
			return err
		}
		defer cl.Close()
		cls[i] = cl
	}
	var accepted atomic.Int64
	errs := make([]error, m)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, cl := range cls {
		wg.Go(func() {
			for accepted.Load() < int64(n) && rctx.Err() == nil {
				fs := cl.PollFetches(rctx)
				if err := fetchErr(rctx, fs); err != nil {
					errs[i] = err
					cancel()
					return
				}
				now := time.Now()
				fs.EachRecord(func(r *kgo.Record) {
					clock.delivered(r.Offset, r.DeliveryCount(), now)
					if int(r.DeliveryCount()) <= releases {
						r.Ack(kgo.AckRelease)
						return
					}
					r.Ack(kgo.AckAccept)
					if accepted.Add(1) >= int64(n) {
						cancel() // wake the others
					}
				})
			}
			if err := cl.FlushAcks(ctx); err != nil {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if a := accepted.Load(); a < int64(n) {
		return fmt.Errorf("accepted %d of %d records", a, n)
	}
	return nil
}

// releaseClock pairs each release sent with the record's next delivery.
type releaseClock struct {
	mu        sync.Mutex
	count     map[int64]int32     // offset: its delivery count last polled
	sent      map[int64]time.Time // offset: when its release was handed to a connection
	from      map[int64]int32     // offset: the delivery count its release ended
	waits     [][]time.Duration   // [n]: release after delivery n to delivery n+1
	unmatched atomic.Int64        // deliveries n+1 with no release of delivery n seen
	undecoded atomic.Int64        // ShareFetch or ShareAcknowledge requests not decoded
}

func newReleaseClock(releases int) *releaseClock {
	return &releaseClock{count: map[int64]int32{}, sent: map[int64]time.Time{}, from: map[int64]int32{},
		waits: make([][]time.Duration, releases+1)}
}

// delivered notes the poll that returned offset's delivery n at at.
func (c *releaseClock) delivered(offset int64, n int32, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count[offset] = n
	if n <= 1 {
		return
	}
	if t, ok := c.sent[offset]; ok && c.from[offset] == n-1 && int(n-1) < len(c.waits) {
		c.waits[n-1] = append(c.waits[n-1], at.Sub(t))
	} else {
		c.unmatched.Add(1)
	}
	delete(c.sent, offset)
}

// released notes a request releasing offset handed to a connection at
// at. A release sent twice (a retry) counts from the first.
func (c *releaseClock) released(offset int64, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.count[offset]
	if _, ok := c.sent[offset]; ok && c.from[offset] == n {
		return
	}
	c.sent[offset], c.from[offset] = at, n
}

type waitStats struct {
	n                   int
	p50, mean, p99, max float64 // ms
}

func (c *releaseClock) stats(n int) waitStats {
	c.mu.Lock()
	ws := slices.Clone(c.waits[n])
	c.mu.Unlock()
	if len(ws) == 0 {
		return waitStats{}
	}
	slices.Sort(ws)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	rank := func(q float64) time.Duration { return ws[int(math.Ceil(q*float64(len(ws))))-1] } // nearest rank
	var sum time.Duration
	for _, w := range ws {
		sum += w
	}
	return waitStats{n: len(ws), p50: ms(rank(0.50)), mean: ms(sum) / float64(len(ws)), p99: ms(rank(0.99)), max: ms(ws[len(ws)-1])}
}

// wireConn reads the Kafka requests a client writes, before writing them,
// and tells clock of each record a ShareFetch or ShareAcknowledge
// releases. The requests are noted before the write so that the broker
// cannot answer one before it is noted.
type wireConn struct {
	net.Conn
	clock *releaseClock
	mu    sync.Mutex
	buf   []byte // an incomplete request
}

func (c *wireConn) Write(p []byte) (int, error) {
	now := time.Now()
	c.mu.Lock()
	c.buf = append(c.buf, p...)
	for len(c.buf) >= 4 {
		size := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+size {
			break
		}
		offsets, err := releasesIn(c.buf[4 : 4+size])
		if err != nil {
			c.clock.undecoded.Add(1)
		}
		for _, o := range offsets {
			c.clock.released(o, now)
		}
		c.buf = c.buf[4+size:]
	}
	if len(c.buf) == 0 {
		c.buf = nil
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

const releaseAck = 2 // AcknowledgeType release

var errShortRequest = errors.New("request shorter than its header")

// releasesIn returns the offsets a ShareFetch or ShareAcknowledge request
// (without its size prefix) releases; none for any other request.
func releasesIn(req []byte) ([]int64, error) {
	if len(req) < 10 {
		return nil, errShortRequest
	}
	key, version := int16(binary.BigEndian.Uint16(req)), int16(binary.BigEndian.Uint16(req[2:]))
	var kreq kmsg.Request
	switch key {
	case kmsg.ShareFetch.Int16():
		kreq = &kmsg.ShareFetchRequest{Version: version}
	case kmsg.ShareAcknowledge.Int16():
		kreq = &kmsg.ShareAcknowledgeRequest{Version: version}
	default:
		return nil, nil
	}
	// Request header v2 (both are flexible): key, version, correlation id,
	// client id (nullable int16-length string), tagged fields.
	b := req[8:]
	if idLen := int(int16(binary.BigEndian.Uint16(b))); idLen > 0 {
		if len(b) < 2+idLen {
			return nil, errShortRequest
		}
		b = b[2+idLen:]
	} else {
		b = b[2:]
	}
	tags, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errShortRequest
	}
	b = b[k:]
	for range tags { // each: its number, its size, its bytes
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errShortRequest
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errShortRequest
		}
		b = b[k+int(size):]
	}
	if err := kreq.ReadFrom(b); err != nil {
		return nil, err
	}
	var offsets []int64
	add := func(first, last int64, types []int8) {
		for o := first; o <= last; o++ {
			t := types[0]
			if len(types) > 1 && int(o-first) < len(types) {
				t = types[o-first]
			}
			if t == releaseAck {
				offsets = append(offsets, o)
			}
		}
	}
	switch r := kreq.(type) {
	case *kmsg.ShareFetchRequest:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				for _, a := range p.AcknowledgementBatches {
					if len(a.AcknowledgeTypes) > 0 {
						add(a.FirstOffset, a.LastOffset, a.AcknowledgeTypes)
					}
				}
			}
		}
	case *kmsg.ShareAcknowledgeRequest:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				for _, a := range p.AcknowledgementBatches {
					if len(a.AcknowledgeTypes) > 0 {
						add(a.FirstOffset, a.LastOffset, a.AcknowledgeTypes)
					}
				}
			}
		}
	}
	return offsets, nil
}
