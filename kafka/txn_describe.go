package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// TxnDescribeCore is what the KIP-664 read APIs need of the core
// (DescribeTransactions, ListTransactions, DescribeProducers; package
// broker's *Broker). A Core without it (the unit tests' fake) has no
// transactions: every id is TRANSACTIONAL_ID_AUTHORIZATION_FAILED (as
// FindCoordinator answers), none is listed, and no partition's producers
// are described (UNKNOWN_TOPIC_OR_PARTITION).
type TxnDescribeCore interface {
	DescribeTxn(ctx context.Context, p Principal, id string) (broker.DescribedTxn, bool, error)
	ListTxns(ctx context.Context, p Principal, f broker.TxnFilter) ([]broker.ListedTxn, error)
	DescribeProducers(ctx context.Context, p Principal, topic string, partition int32) ([]broker.ProducerInfo, error)
}

var _ TxnDescribeCore = (*broker.Broker)(nil)

func (s *Server) txnDescribeCore() TxnDescribeCore {
	dc, _ := s.core.(TxnDescribeCore)
	return dc
}

// handleDescribeTransactions describes each transactional id on its
// coordinator: describe on the id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// NOT_COORDINATOR from a node that does not coordinate transactions,
// TRANSACTIONAL_ID_NOT_FOUND for an id the coordinator holds no record of.
func handleDescribeTransactions(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	return func() kmsg.Response {
		dc := s.txnDescribeCore()
		ctx, cancel := contextWithTimeout(r, 0)
		defer cancel()
		for _, id := range req.TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID = id
			if dc == nil {
				st.ErrorCode = errNoTxns.Code
				resp.TransactionStates = append(resp.TransactionStates, st)
				continue
			}
			d, found, err := dc.DescribeTxn(ctx, r.c.principal, id)
			switch {
			case err != nil:
				st.ErrorCode = r.txnCode(err, false)
			case !found:
				st.ErrorCode = kerr.TransactionalIDNotFound.Code
			default:
				describedTxn(&st, d)
			}
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp
	}
}

// describedTxn fills st from d, its partitions grouped by topic in the
// order they joined the transaction.
func describedTxn(st *kmsg.DescribeTransactionsResponseTransactionState, d broker.DescribedTxn) {
	st.State, st.TimeoutMillis, st.StartTimestamp = d.State, d.TimeoutMs, d.StartMs
	st.ProducerID, st.ProducerEpoch = d.ProducerID, d.Epoch
	byTopic := map[string]int{}
	for _, tp := range d.Partitions {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(st.Topics)
			byTopic[tp.Topic] = i
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic = tp.Topic
			st.Topics = append(st.Topics, t)
		}
		st.Topics[i].Partitions = append(st.Topics[i].Partitions, tp.Partition)
	}
}

// handleListTransactions lists the transactional ids this node
// coordinates that the principal may describe, filtered by state,
// producer id, duration (v1) and id pattern (v2, RE2, matching the whole
// id). As ListGroups, a node that does not coordinate transactions lists
// none, without an error (admin clients ask every broker). State filters
// that are none of Kafka's states are listed back as unknown.
func handleListTransactions(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	return func() kmsg.Response {
		f := broker.TxnFilter{ProducerIDs: req.ProducerIDFilters, MinDuration: broker.TxnAnyDuration}
		for _, name := range req.StateFilters {
			if broker.KnownTxnState(name) {
				f.States = append(f.States, name)
			} else {
				resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			}
		}
		if len(req.StateFilters) > 0 && len(f.States) == 0 {
			return resp // only unknown states: none matches
		}
		if req.Version >= 1 && req.DurationFilterMillis >= 0 {
			f.MinDuration = time.Duration(req.DurationFilterMillis) * time.Millisecond
		}
		if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
			re, err := broker.CompileTxnIDPattern(*req.TransactionalIDPattern)
			if err != nil {
				resp.ErrorCode = kerr.InvalidRegularExpression.Code
				return resp
			}
			f.IDPattern = re
		}
		dc := s.txnDescribeCore()
		if dc == nil {
			return resp
		}
		ctx, cancel := contextWithTimeout(r, 0)
		list, err := dc.ListTxns(ctx, r.c.principal, f)
		cancel()
		var nc *NotCoordinatorError
		if errors.As(err, &nc) {
			return resp
		}
		if err != nil {
			resp.ErrorCode = r.txnCode(err, false)
			return resp
		}
		for _, l := range list {
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = l.ID, l.ProducerID, l.State
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp
	}
}

// handleDescribeProducers describes each partition's producers on its
// leader: read on the topic (TOPIC_AUTHORIZATION_FAILED),
// NOT_LEADER_OR_FOLLOWER from another node.
func handleDescribeProducers(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	return func() kmsg.Response {
		dc := s.txnDescribeCore()
		ctx, cancel := contextWithTimeout(r, 0)
		defer cancel()
		for _, rt := range req.Topics {
			t := kmsg.NewDescribeProducersResponseTopic()
			t.Topic = rt.Topic
			for _, part := range rt.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition = part
				if dc == nil {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else if ps, err := dc.DescribeProducers(ctx, r.c.principal, rt.Topic, part); err != nil {
					rp.ErrorCode = r.topicCode(err)
					rp.ErrorMessage = kmsg.StringPtr(err.Error())
				} else {
					rp.ActiveProducers = activeProducers(ps)
				}
				t.Partitions = append(t.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}

func activeProducers(ps []broker.ProducerInfo) []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	out := make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(ps))
	for _, p := range ps {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch = p.ProducerID, int32(p.Epoch)
		ap.LastSequence, ap.LastTimestamp = p.LastSequence, p.LastTimestamp
		// The coordinator-epoch field of its last marker, as Kafka
		// answers (logd's carries the transaction's number), or -1.
		ap.CoordinatorEpoch = p.CoordinatorEpoch
		ap.CurrentTxnStartOffset = p.TxnStartOffset
		out = append(out, ap)
	}
	return out
}
