package client

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// Ack marks r processed: it is never delivered again. It is sent with the
// next Poll, Flush or Close.
func (s *ShareConsumer) Ack(r ShareRecord) error {
	return s.acknowledge(r, logdv1.ShareAckType_SHARE_ACK_ACCEPT, "")
}

// Release gives r back: it is delivered again, to any member, unless it
// reached the group's delivery limit.
func (s *ShareConsumer) Release(r ShareRecord) error {
	return s.acknowledge(r, logdv1.ShareAckType_SHARE_ACK_RELEASE, "")
}

// Reject marks r unprocessable: it is never delivered again.
func (s *ShareConsumer) Reject(r ShareRecord) error {
	return s.acknowledge(r, logdv1.ShareAckType_SHARE_ACK_REJECT, "")
}

// RejectWithReason is Reject saying why: the record's dead letter (when
// the group has a dead-letter topic) carries reason as its
// logd.dlq.error header, cut by the node to its first 1024 bytes.
func (s *ShareConsumer) RejectWithReason(r ShareRecord, reason string) error {
	return s.acknowledge(r, logdv1.ShareAckType_SHARE_ACK_REJECT, reason)
}

func (s *ShareConsumer) acknowledge(r ShareRecord, t logdv1.ShareAckType, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrShareConsumerClosed
	}
	k := shareKey{r.Partition, r.Offset}
	if r.Topic != s.topic || !s.held[k] {
		return fmt.Errorf("record %s-%d@%d is not held by this share consumer (acknowledged already, or not polled by it)",
			r.Topic, r.Partition, r.Offset)
	}
	delete(s.held, k)
	s.pending = append(s.pending, &logdv1.ShareAck{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Type: t, Reason: reason})
	return nil
}

// Flush sends the pending acknowledgements now; a *ShareAckError names
// those the node did not apply.
func (s *ShareConsumer) Flush(ctx context.Context) error {
	s.poll.Lock()
	defer s.poll.Unlock()
	s.mu.Lock()
	none := len(s.pending) == 0
	s.mu.Unlock()
	if none {
		return nil
	}
	ackErr, err := s.exchange(ctx, 0, s.acknowledgeCall(nil))
	return errors.Join(err, ackErr)
}

// acknowledgeCall is an Acknowledge at the exchange's epoch, or at epoch
// -1 when closing.
func (s *ShareConsumer) acknowledgeCall(closing *bool) func(ctx context.Context, cc *grpc.ClientConn, epoch int32, acks []*logdv1.ShareAck) (shareAnswer, error) {
	return func(ctx context.Context, cc *grpc.ClientConn, epoch int32, acks []*logdv1.ShareAck) (shareAnswer, error) {
		if closing != nil && *closing && epoch != 0 {
			epoch = -1
		}
		r, err := logdv1.NewShareClient(cc).Acknowledge(ctx, &logdv1.ShareAcknowledgeRequest{Group: s.group,
			MemberId: s.member, SessionEpoch: epoch, Acks: acks})
		if err != nil {
			return shareAnswer{}, err
		}
		return shareAnswer{r.Status, r.Message, r.Acks}, nil
	}
}

// Close sends the pending acknowledgements and leaves, releasing every
// record the consumer still holds so other members get them at once.
func (s *ShareConsumer) Close(ctx context.Context) error {
	s.poll.Lock()
	defer s.poll.Unlock()
	s.mu.Lock()
	open := s.epoch != 0 && !s.closed
	s.mu.Unlock()
	var ackErr, err error
	if open {
		closing := true
		ackErr, err = s.exchange(ctx, 0, s.acknowledgeCall(&closing))
	}
	s.mu.Lock()
	s.closed, s.pending, s.held = true, nil, map[shareKey]bool{}
	s.mu.Unlock()
	return errors.Join(err, ackErr)
}
