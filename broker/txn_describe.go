package broker

import (
	"context"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/txn"
)

// Describing transactions and producers (Kafka's KIP-664 read APIs,
// docs/transactions.md "Describing transactions"): read-only views of the
// coordinator's records and of a partition's producer state.

type (
	// TxnFilter selects the transactional ids ListTxns lists.
	TxnFilter = txn.Filter
	// ProducerInfo is a producer's state in a partition.
	ProducerInfo = partition.ProducerInfo
)

// TxnAnyDuration is a TxnFilter's MinDuration that keeps every id.
const TxnAnyDuration = txn.AnyDuration

// The filters' helpers, named here so that the front-ends import the
// broker only.
var (
	// CompileTxnIDPattern compiles a pattern (RE2) matching whole ids.
	CompileTxnIDPattern = txn.CompileIDPattern
	// KnownTxnState reports whether a name is one of Kafka's states.
	KnownTxnState = txn.KnownState
)

// DescribedTxn is a transactional id's state, as DescribeTransactions
// answers it.
type DescribedTxn struct {
	ID         string
	State      string // Kafka's name: Empty, Ongoing, PrepareCommit, ...
	ProducerID int64
	Epoch      int16
	TimeoutMs  int32
	// StartMs is when its transaction (the last one, once ended) started,
	// in Unix milliseconds; -1 when none has.
	StartMs int64
	// Partitions are those in its transaction, of the topics the asker
	// may describe.
	Partitions []TxnPartition
}

// DescribeTxn describes transactional id id: pr needs describe on it.
// found is false when the coordinator holds no record of it; a node that
// does not coordinate transactions answers *NotCoordinatorError. A
// transaction being ended is described once the coordinator's step ends
// (it serializes each id's steps).
func (b *Broker) DescribeTxn(ctx context.Context, pr Principal, id string) (d DescribedTxn, found bool, err error) {
	c, err := b.txnCoordinator(ctx, pr, auth.OpDescribe, id)
	if err != nil {
		return DescribedTxn{}, false, err
	}
	r, ok := c.Get(id)
	if !ok {
		return DescribedTxn{}, false, nil
	}
	d = DescribedTxn{ID: r.ID, State: r.State.String(), ProducerID: r.ProducerID, Epoch: r.Epoch,
		TimeoutMs: r.TimeoutMs, StartMs: r.StartTime()}
	for _, tp := range r.Partitions {
		if b.allowed(pr, auth.OpDescribe, auth.Topic(tp.Topic)) {
			d.Partitions = append(d.Partitions, tp)
		}
	}
	return d, true, nil
}

// ListedTxn is a transactional id as ListTransactions lists it.
type ListedTxn struct {
	ID         string
	ProducerID int64
	State      string // Kafka's name
}

// ListTxns lists the transactional ids the coordinator holds that f
// selects and pr may describe, by id. A node that does not coordinate
// transactions answers *NotCoordinatorError.
func (b *Broker) ListTxns(ctx context.Context, pr Principal, f TxnFilter) ([]ListedTxn, error) {
	c, err := b.txns.get(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixMilli()
	var out []ListedTxn
	for _, r := range c.Records() {
		if f.Match(r, now) && b.allowed(pr, auth.OpDescribe, auth.TransactionalID(r.ID)) {
			out = append(out, ListedTxn{ID: r.ID, ProducerID: r.ProducerID, State: r.State.String()})
		}
	}
	return out, nil
}

// DescribeProducers is a partition's producers, on its leader (others
// answer *NotLeaderError): pr needs read on the topic, as in Kafka.
func (b *Broker) DescribeProducers(ctx context.Context, pr Principal, topic string, part int32) ([]ProducerInfo, error) {
	if err := b.Authorize(ctx, pr, auth.OpRead, auth.Topic(topic)); err != nil {
		return nil, err
	}
	p, err := b.topics.Partition(topic, part)
	if err != nil {
		return nil, b.topicLookup(ctx, topic, err)
	}
	if err := b.plane.mustLead(ctx, p); err != nil {
		return nil, err
	}
	return p.Producers(), nil
}
