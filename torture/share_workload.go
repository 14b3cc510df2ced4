package torture

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/client"
)

// ShareConfig configures the share-group workload: a Kafka producer
// writes unique values to Topic while Members share-group members (more
// than its partitions) poll it through franz-go's share consumer over the
// cluster's Kafka listeners. Each member accepts most records, releases
// some, rejects some, now and then stalls past its locks before
// answering, closes (releasing what it holds) or crashes (its connections
// cut, then closed: it holds its records until their locks expire).
// CheckShare judges the history.
type ShareConfig struct {
	Topic      string // default "torture-share"
	Group      string // default "torture-share"
	Partitions int32  // default 2
	Members    int    // default 5
	// Rate is the records produced a second (default 40).
	Rate int
	// Limit is the group's share.delivery.attempt.limit (default 3);
	// LockDuration its share.record.lock.duration.ms (default 3 s).
	Limit        int32
	LockDuration time.Duration
	// Keys, when above 0, turns per-key ordering on: the group has
	// share.key.ordering=true and the producer writes value s<seq> with
	// key k<seq mod Keys>, placed by its key's hash (CheckShare then
	// checks the hand-out order of each key).
	Keys int
}

func (c *ShareConfig) setDefaults() {
	if c.Topic == "" {
		c.Topic = "torture-share"
	}
	if c.Group == "" {
		c.Group = "torture-share"
	}
	if c.Partitions <= 0 {
		c.Partitions = 2
	}
	if c.Members <= 0 {
		c.Members = 5
	}
	if c.Rate <= 0 {
		c.Rate = 40
	}
	if c.Limit <= 0 {
		c.Limit = 3
	}
	if c.LockDuration <= 0 {
		c.LockDuration = 3 * time.Second
	}
}

// ShareWorkload drives the share-group producer and members beside a
// main Workload, whose cluster, seed and clock it shares.
type ShareWorkload struct {
	cfg ShareConfig
	w   *Workload
	mu  sync.Mutex
	h   ShareHistory
	wg  sync.WaitGroup
	// last is when a poll last returned records (UnixNano): the drain
	// ends once it has been quiet long enough.
	last atomic.Int64
}

// NewShareWorkload returns the share-group workload beside w.
func NewShareWorkload(w *Workload, cfg ShareConfig) *ShareWorkload {
	cfg.setDefaults()
	return &ShareWorkload{cfg: cfg, w: w, h: ShareHistory{Limit: cfg.Limit, Keys: cfg.Keys}}
}

// Setup creates the topic and sets the group's configs through one node
// (a group's configs are the cluster's: any node passes a change on to
// the metadata leader), retrying until it answers.
func (sw *ShareWorkload) Setup(ctx context.Context) error {
	addrs := sw.w.kafkaAddrs(0)
	if len(addrs) == 0 {
		return errors.New("torture: the share-group workload needs a cluster that serves Kafka")
	}
	if err := sw.w.createTopic(ctx, sw.cfg.Topic, client.TopicOptions{Partitions: sw.cfg.Partitions}); err != nil {
		return err
	}
	return sw.configure(ctx, addrs[sw.w.rng(8998).IntN(len(addrs))])
}

// configure sets the group's configs through the node at addr.
func (sw *ShareWorkload) configure(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, sw.cfg.Group
	for name, value := range map[string]string{
		"share.auto.offset.reset":       "earliest",
		"share.delivery.attempt.limit":  strconv.Itoa(int(sw.cfg.Limit)),
		"share.record.lock.duration.ms": strconv.FormatInt(sw.cfg.LockDuration.Milliseconds(), 10),
		"share.key.ordering":            strconv.FormatBool(sw.cfg.Keys > 0),
	} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = name, kmsg.StringPtr(value)
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	for {
		resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
		if err == nil && len(resp.Resources) == 1 {
			err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("torture: share group configs on %s: %w", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Run starts the producer and the members and returns at once.
func (sw *ShareWorkload) Run(ctx context.Context) {
	sw.wg.Go(func() { sw.produce(ctx) })
	for i := range sw.cfg.Members {
		sw.wg.Go(func() {
			rng := sw.w.rng(9000 + i)
			for life := 0; ctx.Err() == nil; life++ {
				sw.member(ctx, rng, fmt.Sprintf("m%d.%d", i, life), false)
			}
		})
	}
}

// Wait waits for the clients started by Run.
func (sw *ShareWorkload) Wait() { sw.wg.Wait() }

// History is what the workload recorded.
func (sw *ShareWorkload) History() *ShareHistory {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	h := sw.h
	h.PollErrors = maps.Clone(h.PollErrors)
	return &h
}

func (sw *ShareWorkload) record(f func(*ShareHistory)) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	f(&sw.h)
}

// produce writes Rate unique values a second until ctx ends, then
// delivers or fails what it holds.
func (sw *ShareWorkload) produce(ctx context.Context) {
	rng := sw.w.rng(8999)
	partitioner := kgo.RoundRobinPartitioner()
	if sw.cfg.Keys > 0 {
		partitioner = kgo.StickyKeyPartitioner(nil) // by the key's murmur2 hash
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(sw.w.kafkaAddrs(rng.IntN(sw.w.cluster.Size()))...),
		kgo.DefaultProduceTopic(sw.cfg.Topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(partitioner),
		kgo.RecordDeliveryTimeout(10*time.Second), kgo.DialTimeout(2*time.Second), kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		sw.w.cfg.Logf("share producer: %v", err)
		return
	}
	var pending sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(sw.cfg.Rate))
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			_ = cl.Flush(fctx)
			cancel()
			cl.Close()
			pending.Wait()
			return
		}
		p := ShareProduce{Value: fmt.Sprintf("s%d", seq), Invoke: sw.w.h.Now()}
		pending.Add(1)
		rec := &kgo.Record{Value: []byte(p.Value)}
		if sw.cfg.Keys > 0 {
			rec.Key = []byte(shareKey(seq, sw.cfg.Keys))
		}
		cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
			defer pending.Done()
			p.Complete = sw.w.h.Now()
			switch {
			case err == nil:
				p.Outcome, p.Partition, p.Offset = OutcomeOK, r.Partition, r.Offset
			case kafkaDefinite(err):
				p.Outcome, p.Err = OutcomeFail, err.Error()
			default:
				p.Outcome, p.Err = OutcomeUnknown, err.Error()
			}
			sw.record(func(h *ShareHistory) { h.Produces = append(h.Produces, p) })
		})
	}
}

// shareKey is the key of the seq-th record of an ordered share workload.
func shareKey(seq, keys int) string { return fmt.Sprintf("k%d", seq%keys) }

// cutNet is a member's dialer: cut closes every connection it made and
// refuses new ones, as a crashed process's would be gone.
type cutNet struct {
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func (n *cutNet) dial(ctx context.Context, network, host string) (net.Conn, error) {
	n.mu.Lock()
	cut := n.cut
	n.mu.Unlock()
	if cut {
		return nil, errors.New("torture: member crashed")
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut {
		c.Close()
		return nil, errors.New("torture: member crashed")
	}
	n.conns = append(n.conns, c)
	return c, nil
}

func (n *cutNet) crash() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = true
	for _, c := range n.conns {
		c.Close()
	}
	n.conns = nil
}

// ackCollector gathers the acknowledgement results franz-go reports.
type ackCollector struct {
	mu sync.Mutex
	rs kgo.ShareAckResults
}

func (c *ackCollector) add(_ *kgo.Client, rs kgo.ShareAckResults) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rs = append(c.rs, rs...)
}

func (c *ackCollector) take() kgo.ShareAckResults {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.rs
	c.rs = nil
	return rs
}
