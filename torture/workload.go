package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logd/logd/client"
)

// WorkloadConfig configures a Workload. Zero values take the defaults.
type WorkloadConfig struct {
	Topic      string // default "torture"
	Partitions int32  // default 3
	Producers  int    // default 3
	// KafkaProducers produce the same keys and values over the Kafka
	// protocol with franz-go (kafka.go), to a Cluster that is a
	// KafkaCluster (default 0; the tests take TORTURE_KAFKA).
	KafkaProducers  int
	KeysPerProducer int // default 4, or 2 per partition across the producers if more
	// ProduceRate is each producer's records per second (default 100).
	ProduceRate int
	// MaxOutstanding bounds a producer's records produced and not yet
	// acknowledged or failed (default 32).
	MaxOutstanding int
	// TopicConfig is the topic's configuration; zero: no retention limits
	// and 64 KiB segments. With retention the checkers judge only what
	// the final read still finds (records below its log start count as
	// trimmed).
	TopicConfig *client.TopicConfig
	Followers   int // readers tailing from chosen offsets; default 2
	Groups      int // consumer groups, one member each; default 2
	// GroupMembers share the topic's partitions as members of MemberGroup
	// (default 3; negative: none; the tests take TORTURE_GROUP_MEMBERS).
	GroupMembers int
	// KafkaGroupMembers are franz-go members of each of KafkaMemberGroup
	// (classic protocol) and KafkaMemberGroup848 (KIP-848), to a Cluster
	// that is a KafkaCluster (default 0: none; the tests take
	// TORTURE_KAFKA_GROUP).
	KafkaGroupMembers int
	Seed              int64
	// Producer configures the producers; zero fields take the workload's
	// defaults (short timeouts, so faults produce retries and unknown
	// outcomes within a run).
	Producer client.ProducerOptions
	// ClientNet, when set, gives each producer its own proxy (see
	// NemesisClientCut).
	ClientNet *ClientNet
	// Quiet, when set, keeps every client from starting anything new in
	// the last Quiet.For of every Quiet.Every (see QuietWindows; the tests
	// take TORTURE_QUIET).
	Quiet QuietWindows
	// Logf, when set, receives progress lines.
	Logf func(format string, args ...any)
}

func (c *WorkloadConfig) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Topic == "" {
		c.Topic = "torture"
	}
	if c.Partitions <= 0 {
		c.Partitions = 3
	}
	def(&c.Producers, 3)
	// Enough keys that every partition gets records: 2 per partition
	// across the producers, at least 4 per producer.
	def(&c.KeysPerProducer, max(4, (2*int(c.Partitions)+c.Producers-1)/c.Producers))
	def(&c.ProduceRate, 100)
	def(&c.MaxOutstanding, 32)
	def(&c.Followers, 2)
	def(&c.Groups, 2)
	if c.GroupMembers == 0 {
		c.GroupMembers = 3
	}
	p := &c.Producer
	if p.Linger == 0 {
		p.Linger = 2 * time.Millisecond
	}
	if p.RequestTimeout == 0 {
		p.RequestTimeout = 1500 * time.Millisecond
	}
	if p.DeliveryTimeout == 0 {
		p.DeliveryTimeout = 4 * time.Second
	}
	if p.RetryBackoff == 0 {
		p.RetryBackoff = 50 * time.Millisecond
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// readMaxBytes bounds one partition's fetch by followers and group members:
// many small reads give the checkers finer-grained observations and keep a
// long run's history small.
const readMaxBytes = 64 << 10

// Workload drives producers, followers, consumer groups and an observer of
// committed offsets against a Cluster, recording every operation.
type Workload struct {
	cfg     WorkloadConfig
	cluster Cluster
	h       *History
	started time.Time    // wall clock when Run began: seeks by time ask after it
	procs   atomic.Int64 // process ids handed out
	wg      sync.WaitGroup

	// values interns record values read: a long run reads each record
	// many times, and the history keeps every read.
	valuesMu sync.Mutex
	values   map[string]string
}

func (w *Workload) intern(b []byte) string {
	w.valuesMu.Lock()
	defer w.valuesMu.Unlock()
	if s, ok := w.values[string(b)]; ok {
		return s
	}
	if w.values == nil {
		w.values = map[string]string{}
	}
	s := string(b)
	w.values[s] = s
	return s
}

// NewWorkload returns a workload recording into h.
func NewWorkload(c Cluster, h *History, cfg WorkloadConfig) *Workload {
	cfg.setDefaults()
	return &Workload{cfg: cfg, cluster: c, h: h}
}

// Config is the workload's configuration, defaults applied.
func (w *Workload) Config() WorkloadConfig { return w.cfg }

func (w *Workload) process() int { return int(w.procs.Add(1)) - 1 }

func (w *Workload) rng(salt int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(w.cfg.Seed), uint64(salt)))
}

// dial connects to a node chosen by rng.
func (w *Workload) dial(rng *rand.Rand) (*client.Client, error) {
	return client.Dial(w.cluster.Addr(rng.IntN(w.cluster.Size())), client.WithCallTimeout(3*time.Second))
}

// Setup creates the topic, retrying until a node answers (or ctx ends).
func (w *Workload) Setup(ctx context.Context) error {
	tc := client.TopicConfig{
		RetentionTime: client.Unlimited, RetentionBytes: client.Unlimited, RetentionRecords: client.Unlimited,
		SegmentBytes: 64 << 10, // many segments: rolls, indexes and producer state under fire
	}
	if w.cfg.TopicConfig != nil {
		tc = *w.cfg.TopicConfig
	}
	return w.createTopic(ctx, w.cfg.Topic, client.TopicOptions{Partitions: w.cfg.Partitions, Config: tc})
}

// createTopic creates topic with opts, retrying until a node answers (or
// ctx ends). Every node holds a replica (up to 3), asked for explicitly:
// the server's default counts the nodes registered when the request
// lands, and a node that had not joined yet once left an in-process run
// with single-replica partitions (a much weaker test). A create before
// every node joined is refused and retried.
func (w *Workload) createTopic(ctx context.Context, topic string, opts client.TopicOptions) error {
	c, err := client.Dial(w.cluster.Addr(0), client.WithCallTimeout(3*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	if n := w.cluster.Size(); n > 1 {
		opts.Replicas = int32(min(3, n))
	}
	for {
		_, err := c.Admin().CreateTopic(ctx, topic, opts)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("torture: create topic %q: %w", topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Run starts every client and returns at once; Wait waits for them after
// ctx ends (producers first deliver or fail what they hold).
func (w *Workload) Run(ctx context.Context) {
	w.started = time.Now()
	for i := range w.cfg.Producers {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.produce(ctx, i) }()
	}
	for i := range w.cfg.KafkaProducers {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.kafkaProduce(ctx, i) }()
	}
	for i := range w.cfg.Followers {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.follow(ctx, i) }()
	}
	for i := range w.cfg.Groups {
		group := fmt.Sprintf("group-%d", i)
		w.wg.Add(2)
		go func() { defer w.wg.Done(); w.consumeGroup(ctx, i, group) }()
		go func() { defer w.wg.Done(); w.observe(ctx, i, group) }()
	}

	for i := range max(w.cfg.GroupMembers, 0) {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.groupMember(ctx, i) }()
	}
	if w.cfg.GroupMembers > 0 {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.observeMembers(ctx, MemberGroup, 0, true) }()
	}
	if w.cfg.KafkaGroupMembers > 0 && len(w.kafkaAddrs(0)) > 0 {
		for gi, group := range []string{KafkaMemberGroup, KafkaMemberGroup848} {
			for i := range w.cfg.KafkaGroupMembers {
				w.wg.Add(1)
				go func() { defer w.wg.Done(); w.kafkaGroupMember(ctx, 100*gi+i, group) }()
			}
			w.wg.Add(1)
			go func() { defer w.wg.Done(); w.observeMembers(ctx, group, 1+gi, group == KafkaMemberGroup) }()
		}
	}
}

// Wait waits for the clients started by Run.
func (w *Workload) Wait() { w.wg.Wait() }

// produce runs producer id: records of its keys, paced at ProduceRate, at
// most MaxOutstanding unacknowledged.
func (w *Workload) produce(ctx context.Context, id int) {
	rng := w.rng(1000 + id)
	proc := w.process()
	var c *client.Client
	var err error
	if w.cfg.ClientNet != nil {
		var addr string
		if addr, err = w.cfg.ClientNet.Dial(w.cluster.Addr(rng.IntN(w.cluster.Size()))); err == nil {
			c, err = client.Dial(addr, client.WithCallTimeout(3*time.Second))
		}
	} else {
		c, err = w.dial(rng)
	}
	if err != nil {
		w.cfg.Logf("producer %d: %v", id, err)
		return
	}
	defer c.Close()
	p := c.NewProducer(w.cfg.Producer)
	w.paced(ctx, rng, id, proc, func(op Op, release func()) {
		var inCall atomic.Bool
		inCall.Store(true)
		op.Invoke = w.h.Now()
		p.ProduceFunc(ctx, client.Record{Topic: w.cfg.Topic, Key: []byte(op.Key), Value: []byte(op.Value)}, func(ack client.Ack, err error) {
			op.Complete = w.h.Now()
			switch {
			case err == nil:
				op.Outcome, op.Partition, op.Offset, op.Duplicate = OutcomeOK, ack.Partition, ack.Offset, ack.Duplicate
			case inCall.Load():
				// Failed before it was queued: never sent.
				op.Outcome, op.Err = OutcomeFail, err.Error()
			default:
				op.Outcome, op.Err = OutcomeUnknown, err.Error()
			}
			w.h.Add(op)
			release()
		})
		inCall.Store(false)
	})
	// Deliver what is queued: Close retries each batch until it is
	// acknowledged or its DeliveryTimeout passes; every callback has run
	// when it returns.
	p.Close()
}

// paced hands producer id's next record to send at ProduceRate while at
// most MaxOutstanding are unacknowledged: a key of its KeysPerProducer
// at random, with that key's next sequence number. send records the op's
// outcome, then calls release. It returns when ctx ends.
func (w *Workload) paced(ctx context.Context, rng *rand.Rand, id, proc int, send func(op Op, release func())) {
	sem := make(chan struct{}, w.cfg.MaxOutstanding)
	release := func() { <-sem }
	seqs := make([]int64, w.cfg.KeysPerProducer)
	tick := time.NewTicker(time.Second / time.Duration(w.cfg.ProduceRate))
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		w.waitQuiet(ctx)
		k := rng.IntN(len(seqs))
		seqs[k]++
		v := Value{Producer: id, Key: KeyName(id, k), Seq: seqs[k]}
		send(Op{Process: proc, Kind: OpProduce, Producer: id, Key: v.Key, Seq: v.Seq, Value: v.String()}, release)
	}
}

// CheckAvailable produces one record to each partition, each within
// timeout, recording them like the workload's: after the nemeses stopped,
// every partition must accept appends again.
func (w *Workload) CheckAvailable(ctx context.Context, timeout time.Duration) error {
	c, err := client.Dial(w.cluster.Addr(0), client.WithCallTimeout(timeout))
	if err != nil {
		return err
	}
	defer c.Close()
	opts := w.cfg.Producer
	opts.DeliveryTimeout = timeout
	p := c.NewProducer(opts)
	defer p.Close()
	proc, id := w.process(), w.cfg.Producers // a producer id no workload producer has
	var errs []error
	for part := range w.cfg.Partitions {
		v := Value{Producer: id, Key: fmt.Sprintf("available-%d", part), Seq: 1}
		op := Op{Process: proc, Kind: OpProduce, Producer: id, Key: v.Key, Seq: v.Seq, Value: v.String(), Invoke: w.h.Now()}
		ack, err := p.Produce(ctx, client.Record{Topic: w.cfg.Topic, Partition: client.ToPartition(part), Key: []byte(v.Key), Value: []byte(op.Value)}).Get(ctx)
		op.Complete = w.h.Now()
		if err != nil {
			op.Outcome, op.Err = OutcomeUnknown, err.Error()
			errs = append(errs, fmt.Errorf("partition %d accepts no append %s after the faults stopped: %w", part, timeout, err))
		} else {
			op.Outcome, op.Partition, op.Offset, op.Duplicate = OutcomeOK, ack.Partition, ack.Offset, ack.Duplicate
		}
		w.h.Add(op)
	}
	return errors.Join(errs...)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
