package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleProduce starts every partition's write in request order (so that a
// client's pipelined produces are appended in the order sent) and answers
// once all are acknowledged. The batch goes to the core as the client sent
// it: the core checks it (CRC, counts, compression) and its producer id,
// epoch and sequence drive the core's deduplication. acks=0 is not
// answered; a failure closes the connection instead, as in Kafka. From
// v12 a transactional producer speaks transaction version 2 (KIP-890
// part 2): its batch adds its partition to its transaction.
func handleProduce(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acks, ackErr := produceAcks(req.Acks)
	if e := s.produceTxnCheck(r, req.TransactionID); e != nil {
		ackErr = e
	}
	ctx, cancel := context.WithTimeout(r.ctx, requestTimeout(req.TimeoutMillis))
	type started struct {
		p     *kmsg.ProduceResponseTopicPartition
		f     ProduceFuture
		batch []byte
	}
	var waits []started
	for _, rt := range req.Topics {
		t := kmsg.NewProduceResponseTopic()
		t.Topic = rt.Topic
		t.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for i, rp := range rt.Partitions {
			p := &t.Partitions[i]
			*p = kmsg.NewProduceResponseTopicPartition()
			p.Partition = rp.Partition
			p.BaseOffset, p.LogAppendTime, p.LogStartOffset = -1, -1, -1
			if ackErr != nil {
				p.ErrorCode = ackErr.Code
				continue
			}
			f, err := s.core.StartProduce(ctx, ProduceRequest{
				Principal: r.c.principal, Topic: rt.Topic, Partition: rp.Partition,
				Batch: rp.Records, Acks: acks, TransactionalID: derefString(req.TransactionID),
				AddToTxn: req.Version >= 12,
			})
			if s.offsetsTopicIn(rt.Topic, err) {
				err = errInternalTopicWrite
			}
			if err != nil {
				setProduceError(r, p, err, rp.Records)
				continue
			}
			waits = append(waits, started{p, f, rp.Records})
		}
		resp.Topics = append(resp.Topics, t)
	}
	return func() kmsg.Response {
		defer cancel()
		for _, w := range waits {
			res, err := w.f.Wait()
			if err != nil {
				setProduceError(r, w.p, err, w.batch)
				continue
			}
			w.p.BaseOffset, w.p.LogAppendTime, w.p.LogStartOffset = res.BaseOffset, res.AppendTimeMs, res.LogStart
		}
		resp.ThrottleMillis = s.throttle(r, true, producedBytes(req))
		if req.Acks != 0 {
			return resp
		}
		if err := firstProduceError(resp); err != nil {
			r.fatal = err
		}
		return nil
	}
}

func produceAcks(a int16) (Acks, *kerr.Error) {
	switch a {
	case 0, 1:
		return AcksLeader, nil
	case -1:
		return AcksAll, nil
	default:
		return 0, kerr.InvalidRequiredAcks
	}
}

func setProduceError(r *request, p *kmsg.ProduceResponseTopicPartition, err error, batch []byte) {
	p.ErrorCode = r.produceCode(err, batch)
	p.ErrorMessage = kmsg.StringPtr(err.Error())
}

func firstProduceError(resp *kmsg.ProduceResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return fmt.Errorf("acks=0 produce to %s/%d failed: %v", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return nil
}

// requestTimeout turns a request's timeout into a duration; a missing or
// absurd one gets Kafka's default request timeout.
func requestTimeout(ms int32) time.Duration {
	if ms <= 0 {
		return 30 * time.Second
	}
	return time.Duration(ms) * time.Millisecond
}

// contextWithTimeout is the request's context bounded by its timeout.
func contextWithTimeout(r *request, ms int32) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.ctx, requestTimeout(ms))
}

// producedBytes is the size of a produce's batches, what the producer
// byte rate quota counts.
func producedBytes(req *kmsg.ProduceRequest) int {
	n := 0
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			n += len(rp.Records)
		}
	}
	return n
}
