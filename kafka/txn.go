package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// TxnCore is what the transaction APIs need of the core (package
// broker's *Broker; docs/transactions.md). A Core without it (the unit
// tests' fake) refuses transactional ids with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the one answer on which both
// franz-go and librdkafka stop instead of retrying.
type TxnCore interface {
	CoordinatesTxn(ctx context.Context, p Principal, id string) error
	InitTransactions(ctx context.Context, p Principal, id string, timeout time.Duration, pid int64, epoch int16) (int64, int16, error)
	AddPartitionsToTxn(ctx context.Context, p Principal, id string, pid int64, epoch int16, parts []broker.TxnPartition) ([]error, error)
	AddOffsetsToTxn(ctx context.Context, p Principal, id string, pid int64, epoch int16, group string) error
	TxnCommitOffsets(ctx context.Context, p Principal, id string, pid int64, epoch int16, group, member string, generation int32, offs []broker.TxnOffset) error
	EndTxn(ctx context.Context, p Principal, id string, pid int64, epoch int16, commit bool) error
	// Transaction version 2 (KIP-890 part 2): TxnOffsetCommit v5 adds
	// the group, EndTxn v5 bumps the epoch and answers the next one.
	TxnCommitOffsetsAdding(ctx context.Context, p Principal, id string, pid int64, epoch int16, group, member string, generation int32, offs []broker.TxnOffset) error
	EndTxnBump(ctx context.Context, p Principal, id string, pid int64, epoch int16, commit bool) (int64, int16, error)
	LastStableOffset(ctx context.Context, p Principal, topic string, partition int32) (int64, error)
}

var _ TxnCore = (*broker.Broker)(nil)

// txnCore is s's TxnCore, or nil.
func (s *Server) txnCore() TxnCore {
	tc, _ := s.core.(TxnCore)
	return tc
}

var errNoTxns = kerr.TransactionalIDAuthorizationFailed

// txnCode maps an error of a transaction API: the coordinator's refusals
// to their codes (a fenced epoch is INVALID_PRODUCER_EPOCH for a request
// older than KIP-588's PRODUCER_FENCED), a denial to the resource it
// names (the transactional id by default), the rest as a group API's
// (a node that does not coordinate answers NOT_COORDINATOR).
func txnCode(err error, epochCode bool) int16 {
	var te *broker.TxnError
	if errors.As(err, &te) {
		switch te.Code {
		case broker.TxnProducerFenced:
			if epochCode {
				return kerr.InvalidProducerEpoch.Code
			}
			return kerr.ProducerFenced.Code
		case broker.TxnInvalidState:
			return kerr.InvalidTxnState.Code
		case broker.TxnConcurrent:
			return kerr.ConcurrentTransactions.Code
		case broker.TxnUnknownProducer:
			return kerr.InvalidProducerIDMapping.Code
		case broker.TxnInvalidTimeout:
			return kerr.InvalidTransactionTimeout.Code
		}
	}
	if code, ok := authorizationCode(err, auth.ResourceTransactionalID); ok {
		return code
	}
	return groupCode(err)
}

func (r *request) txnCode(err error, epochCode bool) int16 {
	return r.unexpected(txnCode(err, epochCode), err)
}

// handleInitTransactions is InitProducerId with a transactional id.
func handleInitTransactions(s *Server, r *request, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	tc := s.txnCore()
	if tc == nil {
		resp.ErrorCode = errNoTxns.Code
		return
	}
	timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
	pid, epoch, err := tc.InitTransactions(r.ctx, r.c.principal, *req.TransactionalID, timeout, req.ProducerID, req.ProducerEpoch)
	if err != nil {
		resp.ErrorCode = r.txnCode(err, req.Version < 4)
		return
	}
	resp.ProducerID, resp.ProducerEpoch = pid, epoch
}

// handleAddPartitionsToTxn (v0-3: one transaction per request, sent by
// its producer).
func handleAddPartitionsToTxn(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	return func() kmsg.Response {
		var parts []broker.TxnPartition
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, broker.TxnPartition{Topic: rt.Topic, Partition: p})
			}
		}
		codes := make([]int16, len(parts))
		if tc := s.txnCore(); tc == nil {
			fill(codes, errNoTxns.Code)
		} else if errs, err := tc.AddPartitionsToTxn(r.ctx, r.c.principal, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts); err != nil {
			fill(codes, r.txnCode(err, req.Version < 2))
		} else {
			addPartitionCodes(r, codes, errs)
		}
		byTopic := map[string]int{}
		for i, tp := range parts {
			j, ok := byTopic[tp.Topic]
			if !ok {
				j = len(resp.Topics)
				byTopic[tp.Topic] = j
				t := kmsg.NewAddPartitionsToTxnResponseTopic()
				t.Topic = tp.Topic
				resp.Topics = append(resp.Topics, t)
			}
			p := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			p.Partition, p.ErrorCode = tp.Partition, codes[i]
			resp.Topics[j].Partitions = append(resp.Topics[j].Partitions, p)
		}
		return resp
	}
}

// addPartitionCodes: each refused partition its error, and the others
// OPERATION_NOT_ATTEMPTED when any was refused (Kafka's answer).
func addPartitionCodes(r *request, codes []int16, errs []error) {
	failed := false
	for i, err := range errs {
		if err != nil {
			codes[i], failed = deniedCode(err, "topic"), true
			r.unexpected(codes[i], err)
		}
	}
	if failed {
		for i, err := range errs {
			if err == nil {
				codes[i] = kerr.OperationNotAttempted.Code
			}
		}
	}
}

func fill(codes []int16, c int16) {
	for i := range codes {
		codes[i] = c
	}
}

func handleAddOffsetsToTxn(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	return func() kmsg.Response {
		tc := s.txnCore()
		if tc == nil {
			resp.ErrorCode = errNoTxns.Code
			return resp
		}
		err := tc.AddOffsetsToTxn(r.ctx, r.c.principal, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
		if err != nil {
			resp.ErrorCode = r.txnCode(err, req.Version < 2)
		}
		return resp
	}
}

// handleEndTxn ends a transaction. From v5 (transaction version 2) the
// coordinator bumps the epoch and the answer carries the producer id and
// epoch to go on with; before v5 the epoch stays, as in Kafka.
func handleEndTxn(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	return func() kmsg.Response {
		tc := s.txnCore()
		if tc == nil {
			resp.ErrorCode = errNoTxns.Code
			return resp
		}
		var err error
		if req.Version >= 5 {
			var pid int64
			var epoch int16
			if pid, epoch, err = tc.EndTxnBump(r.ctx, r.c.principal, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit); err == nil {
				resp.ProducerID, resp.ProducerEpoch = pid, epoch
			}
		} else {
			err = tc.EndTxn(r.ctx, r.c.principal, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		}
		if err != nil {
			resp.ErrorCode = r.txnCode(err, req.Version < 2)
		}
		return resp
	}
}

// handleTxnOffsetCommit sends a group's offsets to a transaction: one
// answer for every partition. From v5 (transaction version 2) the group
// joins the transaction without AddOffsetsToTxn.
func handleTxnOffsetCommit(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	return func() kmsg.Response {
		var offs []broker.TxnOffset
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				o := broker.TxnOffset{Topic: rt.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch}
				if p.Metadata != nil {
					o.Metadata = *p.Metadata
				}
				offs = append(offs, o)
			}
		}
		var code int16
		if tc := s.txnCore(); tc == nil {
			code = errNoTxns.Code
		} else {
			gen := int32(-1)
			if req.Version >= 3 {
				gen = req.Generation
			}
			commit := tc.TxnCommitOffsets
			if req.Version >= 5 {
				commit = tc.TxnCommitOffsetsAdding
			}
			err := commit(r.ctx, r.c.principal, req.TransactionalID, req.ProducerID, req.ProducerEpoch,
				req.Group, req.MemberID, gen, offs)
			if err != nil {
				code = r.txnCode(err, req.Version < 3)
			}
		}
		for _, rt := range req.Topics {
			t := kmsg.NewTxnOffsetCommitResponseTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				t.Partitions = append(t.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}

// produceTxnCheck refuses a transactional produce its principal may not
// make (write on the transactional id), or any when the core has no
// transactions.
func (s *Server) produceTxnCheck(r *request, id *string) *kerr.Error {
	if id == nil {
		return nil
	}
	if s.txnCore() == nil || !s.core.Allowed(r.c.principal, auth.OpWrite, auth.TransactionalID(*id)) {
		return kerr.TransactionalIDAuthorizationFailed
	}
	return nil
}

// listStable answers ListOffsets latest under read_committed: the last
// stable offset.
func (s *Server) listStable(r *request, topic string, partition int32) (int64, error) {
	tc := s.txnCore()
	if tc == nil {
		off, _, err := s.core.ListOffset(r.ctx, r.c.principal, topic, partition, Latest)
		return off, err
	}
	return tc.LastStableOffset(r.ctx, r.c.principal, topic, partition)
}

// abortedTxns is a read_committed fetch's aborted transactions.
func abortedTxns(fp FetchedPartition) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(fp.Aborted))
	for _, a := range fp.Aborted {
		t := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		t.ProducerID, t.FirstOffset = a.ProducerID, a.FirstOffset
		out = append(out, t)
	}
	return out
}
