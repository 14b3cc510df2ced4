package server

import (
	"context"
	"math"
	"time"

	"github.com/logd/logd/broker"
	pb "github.com/logd/logd/proto/logd/v1"
)

// The gRPC Transactions service: Kafka's transactions (docs/transactions.md)
// for native clients, over the broker's transaction API through Forward
// (the coordinator runs on one node; any node passes a call on to it).
// The broker's methods are the Kafka front-end's, which authorize each
// call (WRITE on the transactional id, WRITE on each topic added, READ
// on the group and on the topics of the offsets sent).

// txnServer serves the Transactions service.
type txnServer struct {
	pb.UnimplementedTransactionsServer
	s *Server
}

// defaultTxnTimeout is a transaction's timeout when InitProducer names
// none (Kafka's transaction.timeout.ms default).
const defaultTxnTimeout = time.Minute

// InitProducer gives the transactional id its producer id and a new
// epoch, fencing the previous producer of the id.
func (h *txnServer) InitProducer(ctx context.Context, req *pb.TxnInitRequest) (*pb.TxnInitResponse, error) {
	if req.TransactionalId == "" {
		return nil, invalidArg("init producer: transactional_id must not be empty")
	}
	if req.TimeoutMs < 0 {
		return nil, invalidArg("init producer: timeout_ms is 0 (one minute) or more, got %d", req.TimeoutMs)
	}
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if timeout == 0 {
		timeout = defaultTxnTimeout
	}
	pid, epoch, err := h.s.b.Forward().InitTransactions(ctx, principal(ctx), req.TransactionalId, timeout, -1, -1)
	if err != nil {
		return nil, err
	}
	return &pb.TxnInitResponse{ProducerId: pid, Epoch: int32(epoch)}, nil
}

// AddPartitions adds partitions to the producer's transaction.
func (h *txnServer) AddPartitions(ctx context.Context, req *pb.TxnAddPartitionsRequest) (*pb.TxnAddPartitionsResponse, error) {
	id, pid, epoch, err := txnProducer(req.Producer)
	if err != nil {
		return nil, err
	}
	if len(req.Partitions) == 0 {
		return nil, invalidArg("add partitions: no partition named")
	}
	parts := make([]broker.TxnPartition, len(req.Partitions))
	for i, p := range req.Partitions {
		if p.GetTopic() == "" || p.GetPartition() < 0 {
			return nil, invalidArg("add partitions: a partition names a topic and a partition (0 or more)")
		}
		parts[i] = broker.TxnPartition{Topic: p.Topic, Partition: p.Partition}
	}
	if err := h.s.b.Forward().AddPartitionsToTxn(ctx, principal(ctx), id, pid, epoch, parts); err != nil {
		return nil, err
	}
	return &pb.TxnAddPartitionsResponse{}, nil
}

// SendOffsets adds the group to the transaction and sends its offsets
// (Kafka's AddOffsetsToTxn, then TxnOffsetCommit).
func (h *txnServer) SendOffsets(ctx context.Context, req *pb.TxnSendOffsetsRequest) (*pb.TxnSendOffsetsResponse, error) {
	id, pid, epoch, err := txnProducer(req.Producer)
	if err != nil {
		return nil, err
	}
	if req.Group == "" {
		return nil, invalidArg("send offsets: group must not be empty")
	}
	offs := make([]broker.TxnOffset, len(req.Offsets))
	for i, o := range req.Offsets {
		if o.GetTopic() == "" || o.GetPartition() < 0 || o.GetOffset() < 0 {
			return nil, invalidArg("send offsets: an offset names a topic, a partition and an offset (0 or more)")
		}
		offs[i] = broker.TxnOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, LeaderEpoch: -1, Metadata: o.Metadata}
	}
	generation := int32(-1)
	if req.Generation != nil {
		generation = *req.Generation
	}
	f, pr := h.s.b.Forward(), principal(ctx)
	if err := f.AddOffsetsToTxn(ctx, pr, id, pid, epoch, req.Group); err != nil {
		return nil, err
	}
	if err := f.TxnCommitOffsets(ctx, pr, id, pid, epoch, req.Group, req.MemberId, generation, offs); err != nil {
		return nil, err
	}
	return &pb.TxnSendOffsetsResponse{}, nil
}

// End commits or aborts the transaction.
func (h *txnServer) End(ctx context.Context, req *pb.TxnEndRequest) (*pb.TxnEndResponse, error) {
	id, pid, epoch, err := txnProducer(req.Producer)
	if err != nil {
		return nil, err
	}
	if err := h.s.b.Forward().EndTxn(ctx, principal(ctx), id, pid, epoch, req.Commit); err != nil {
		return nil, err
	}
	return &pb.TxnEndResponse{}, nil
}

// txnProducer checks a request's producer.
func txnProducer(p *pb.TxnProducer) (string, int64, int16, error) {
	if p.GetTransactionalId() == "" {
		return "", 0, 0, invalidArg("producer: transactional_id must not be empty")
	}
	if p.GetProducerId() < 0 || p.GetEpoch() < 0 || p.GetEpoch() > math.MaxInt16 {
		return "", 0, 0, invalidArg("producer: producer_id and epoch are InitProducer's answer, got %d and %d", p.GetProducerId(), p.GetEpoch())
	}
	return p.TransactionalId, p.ProducerId, int16(p.Epoch), nil
}
