package torture

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consumer groups whose members are franz-go clients speaking the
// Kafka protocol (WorkloadConfig.KafkaGroupMembers): KafkaMemberGroup with
// the classic protocol (JoinGroup, SyncGroup, Heartbeat, the members'
// cooperative-sticky balancer), KafkaMemberGroup848 with KIP-848's
// ConsumerGroupHeartbeat (the coordinator assigns). Their coordinator is
// the metadata leader, a nemesis target (NemesisConfig.MetaLeaderShare):
// CheckGroupMembers judges them as it judges MemberGroup.
const (
	KafkaMemberGroup    = "kafka-members"
	KafkaMemberGroup848 = "kafka-members-848"
)

// kafkaMember is one franz-go group member and what it reported last.
type kafkaMember struct {
	w     *Workload
	proc  int
	group string
	cl    *kgo.Client

	mu   sync.Mutex // the client's callbacks run on its goroutines
	held map[int32]bool
	next map[int32]kgo.EpochOffset // after the last record handed over

	lastID   string
	lastGen  int32
	lastPart []int32
}

// kafkaGroupMember runs member i of group: it joins, polls, commits what
// it read every few polls (as a Kafka application with auto-commit off
// does) and before it leaves, and after a while leaves and joins again as
// a new client. Rebalances wait for the member between polls
// (kgo.BlockRebalanceOnPoll), so a commit names the generation whose
// partitions it read.
func (w *Workload) kafkaGroupMember(ctx context.Context, i int, group string) {
	rng := w.rng(11000 + i)
	proc := w.process()
	for w.waitQuiet(ctx) {
		seeds := w.kafkaAddrs(rng.IntN(w.cluster.Size()))
		if len(seeds) == 0 {
			w.cfg.Logf("kafka group member %d: the cluster serves no Kafka", i)
			return
		}
		m := &kafkaMember{w: w, proc: proc, group: group, held: map[int32]bool{}, next: map[int32]kgo.EpochOffset{}, lastGen: -1}
		cl, err := kgo.NewClient(m.opts(seeds)...)
		if err != nil {
			w.cfg.Logf("kafka group member %d: %v", i, err)
			return
		}
		m.cl = cl
		for j := range 30 + rng.IntN(120) {
			if !w.waitQuiet(ctx) {
				break
			}
			m.poll(ctx)
			if j%3 == 2 {
				m.commit(ctx)
			}
			cl.AllowRebalance()
		}
		w.waitQuiet(ctx)
		m.commit(ctx)
		cl.Close() // leaves the group
		m.report(true)
		sleep(ctx, time.Duration(rng.IntN(2000))*time.Millisecond)
	}
}

func (m *kafkaMember) opts(seeds []string) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(m.group),
		kgo.ConsumeTopics(m.w.cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(memberSession),
		kgo.HeartbeatInterval(time.Second),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.FetchMaxWait(300 * time.Millisecond),
		kgo.FetchMaxBytes(readMaxBytes),
		kgo.DialTimeout(2 * time.Second),
		kgo.RequestTimeoutOverhead(3 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.OnPartitionsAssigned(m.assigned),
		kgo.OnPartitionsRevoked(m.dropped),
		kgo.OnPartitionsLost(m.dropped),
	}
	if m.group == KafkaMemberGroup848 {
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	}
	return opts
}

func (m *kafkaMember) assigned(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range parts[m.w.cfg.Topic] {
		m.held[p] = true
	}
}

// dropped forgets partitions revoked or lost: what was read of them and
// not committed is read again by their next owner from the last commit.
func (m *kafkaMember) dropped(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range parts[m.w.cfg.Topic] {
		delete(m.held, p)
		delete(m.next, p)
	}
}

// membership is the member's id, generation (a KIP-848 member's epoch)
// and held partitions; "" while it is not a member (no id yet, or a
// KIP-848 member at epoch 0, joining).
func (m *kafkaMember) membership() (string, int32, []int32) {
	id, gen := m.cl.GroupMetadata()
	if id == "" || gen <= 0 {
		return "", -1, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []int32
	for p := range m.held {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	return id, gen, parts
}

// report records the member's assignment when it changed (OpAssign), and
// that it holds nothing once it left.
func (m *kafkaMember) report(left bool) {
	id, gen, parts := m.membership()
	if left {
		id = ""
	}
	now := m.w.h.Now()
	if id == "" {
		if m.lastID != "" {
			m.w.h.Add(Op{Process: m.proc, Kind: OpAssign, Group: m.group, Member: m.lastID, Generation: m.lastGen,
				Invoke: now, Complete: now, Outcome: OutcomeOK})
			m.lastID = ""
		}
		return
	}
	if id == m.lastID && gen == m.lastGen && slices.Equal(parts, m.lastPart) {
		return
	}
	m.lastID, m.lastGen, m.lastPart = id, gen, parts
	m.w.h.Add(Op{Process: m.proc, Kind: OpAssign, Group: m.group, Member: id, Generation: gen,
		Partitions: parts, Invoke: now, Complete: now, Outcome: OutcomeOK})
}

// poll runs one PollFetches and records a read per partition that
// returned records, from its first record to after its last (franz-go
// does not say where a fetch began; the checker's contiguity check holds
// the records in between to account).
func (m *kafkaMember) poll(ctx context.Context) {
	w := m.w
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	inv := w.h.Now()
	fs := m.cl.PollFetches(pctx)
	comp := w.h.Now()
	cancel()
	defer m.report(false)
	id, gen, _ := m.membership()
	fs.EachError(func(topic string, part int32, err error) {
		// The client moved its position back on its own (it took an
		// answer for a lost log): the checker sees the reads that follow,
		// the test's log says why they began where they did.
		var loss *kgo.ErrDataLoss
		if errors.As(err, &loss) {
			w.cfg.Logf("kafka group member (process %d, %s, generation %d): %v", m.proc, id, gen, err)
		}
	})
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Topic != w.cfg.Topic || len(p.Records) == 0 {
			return
		}
		rs := make([]ReadRecord, len(p.Records))
		for i, r := range p.Records {
			rs[i] = ReadRecord{Offset: r.Offset, Value: w.intern(r.Value), Timestamp: r.Timestamp.UnixMilli()}
		}
		last := p.Records[len(p.Records)-1]
		m.mu.Lock()
		if m.held[p.Partition] {
			m.next[p.Partition] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
		}
		m.mu.Unlock()
		w.h.Add(Op{Process: m.proc, Kind: OpRead, Group: m.group, Member: id, Generation: gen, Partition: p.Partition,
			From: rs[0].Offset, Next: last.Offset + 1, Records: rs, Invoke: inv, Complete: comp, Outcome: OutcomeOK})
	})
}

// commit commits what the member read of the partitions it holds, one
// OpMemberCommit per partition, as the member and generation the request
// carried: refused by the group (a missed rebalance, a fenced KIP-848
// epoch) is a failure, anything else not answered an unknown outcome.
func (m *kafkaMember) commit(ctx context.Context) {
	m.mu.Lock()
	offs := map[int32]kgo.EpochOffset{}
	for p, eo := range m.next {
		if m.held[p] {
			offs[p] = eo
		}
	}
	m.mu.Unlock()
	if len(offs) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var (
		req  *kmsg.OffsetCommitRequest
		resp *kmsg.OffsetCommitResponse
		cerr error
	)
	inv := m.w.h.Now()
	m.cl.CommitOffsetsSync(cctx, map[string]map[int32]kgo.EpochOffset{m.w.cfg.Topic: offs},
		func(_ *kgo.Client, rq *kmsg.OffsetCommitRequest, rs *kmsg.OffsetCommitResponse, err error) {
			req, resp, cerr = rq, rs, err
		})
	comp := m.w.h.Now()
	answers := map[int32]int16{}
	if resp != nil {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				answers[p.Partition] = p.ErrorCode
			}
		}
	}
	member, gen := "", int32(-1)
	if req != nil {
		member, gen = req.MemberID, req.Generation
	}
	for p, eo := range offs {
		op := Op{Process: m.proc, Kind: OpMemberCommit, Group: m.group, Member: member, Generation: gen,
			Partition: p, Offset: eo.Offset, Invoke: inv, Complete: comp}
		code, answered := answers[p]
		op.Outcome, op.Err = kafkaCommitOutcome(cerr, code, answered)
		m.w.h.Add(op)
	}
}

// kafkaCommitOutcome judges one partition of an OffsetCommit: stored,
// refused by the group (the member is not in the generation it named, or
// its KIP-848 epoch is stale or fenced: nothing stored), or unknown.
func kafkaCommitOutcome(err error, code int16, answered bool) (Outcome, string) {
	if err == nil && answered && code == 0 {
		return OutcomeOK, ""
	}
	if err == nil && answered {
		err = kerr.ErrorForCode(code)
	}
	if err == nil {
		return OutcomeUnknown, "no answer for the partition"
	}
	for _, refused := range []error{kerr.IllegalGeneration, kerr.UnknownMemberID, kerr.RebalanceInProgress,
		kerr.StaleMemberEpoch, kerr.FencedMemberEpoch} {
		if errors.Is(err, refused) {
			return OutcomeFail, err.Error()
		}
	}
	return OutcomeUnknown, err.Error()
}
