package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// ShareConsumer is a member of a share group (docs/queues.md): queue
// semantics on a topic. Each record it polls is locked to it until
// LockDeadline; it then Acks (done), Releases (deliver it again, to any
// member) or Rejects (never deliver again) it. A record not acknowledged
// before its lock expires is delivered again. Acknowledgements are sent
// with the next Poll, or by Flush and Close. It is safe for concurrent
// use, but one goroutine polls at a time.
type ShareConsumer struct {
	c      *Client
	group  string
	topic  string
	member string

	poll    sync.Mutex // one call to the node at a time (the session epoch)
	mu      sync.Mutex
	epoch   int32
	pending []*logdv1.ShareAck
	held    map[shareKey]bool
	closed  bool
}

type shareKey struct {
	partition int32
	offset    int64
}

// ShareRecord is a record a ShareConsumer holds.
type ShareRecord struct {
	ConsumedRecord
	DeliveryCount int       // 1 on the first delivery
	LockDeadline  time.Time // acknowledge it before then
}

// ShareAckError reports acknowledgements the node did not apply, because
// the member no longer held the records (their locks expired, so they
// will be or were delivered again) or its share session was lost.
type ShareAckError struct {
	Topic     string
	Partition int32
	Message   string
}

func (e *ShareAckError) Error() string {
	return fmt.Sprintf("share acknowledgement of %s-%d not applied: %s", e.Topic, e.Partition, e.Message)
}

// ErrShareConsumerClosed is returned by calls on a closed ShareConsumer.
var ErrShareConsumerClosed = errors.New("share consumer closed")

// ShareConsumer joins share group group on topic as a new member.
func (c *Client) ShareConsumer(group, topic string) (*ShareConsumer, error) {
	if group == "" || topic == "" {
		return nil, errors.New("a share consumer names its group and topic")
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	return &ShareConsumer{c: c, group: group, topic: topic, member: hex.EncodeToString(id),
		held: map[shareKey]bool{}}, nil
}

// Member is the consumer's member id in its group.
func (s *ShareConsumer) Member() string { return s.member }

// Poll sends the pending acknowledgements and acquires up to max records
// (0: 500), waiting up to wait for some to be available. When the
// acknowledgements were not all applied it returns the records and a
// *ShareAckError.
func (s *ShareConsumer) Poll(ctx context.Context, max int, wait time.Duration) ([]ShareRecord, error) {
	s.poll.Lock()
	defer s.poll.Unlock()
	n, err := s.c.topics.partitions(ctx, s.topic)
	if err != nil {
		return nil, err
	}
	req := &logdv1.ShareFetchRequest{Group: s.group, MemberId: s.member, MaxRecords: int32(max),
		MaxWaitMs: int32(wait / time.Millisecond)}
	for p := range n {
		req.Partitions = append(req.Partitions, &logdv1.SharePartitionRef{Topic: s.topic, Partition: p})
	}
	var resp *logdv1.ShareFetchResponse
	acks, err := s.exchange(ctx, wait, func(ctx context.Context, cc *grpc.ClientConn, epoch int32, acks []*logdv1.ShareAck) (shareAnswer, error) {
		req.SessionEpoch, req.Acks = epoch, acks
		r, err := logdv1.NewShareClient(cc).Fetch(ctx, req)
		resp = r
		if err != nil {
			return shareAnswer{}, err
		}
		return shareAnswer{r.Status, r.Message, r.Acks}, nil
	})
	if err != nil && acks != nil {
		return nil, errors.Join(err, acks)
	}
	if err != nil {
		return nil, err
	}
	return s.received(resp), acks
}

// received records what resp handed out as held and queues its gaps.
func (s *ShareConsumer) received(resp *logdv1.ShareFetchResponse) []ShareRecord {
	if resp == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline := time.UnixMilli(resp.LockDeadlineMs)
	out := make([]ShareRecord, 0, len(resp.Records))
	for _, r := range resp.Records {
		rec := r.Record
		cr := ConsumedRecord{Topic: r.Topic, Partition: r.Partition, Offset: rec.Offset, Key: rec.Key, Value: rec.Value,
			Timestamp: time.UnixMilli(rec.TimestampMs)}
		for _, h := range rec.Headers {
			cr.Headers = append(cr.Headers, Header{Key: h.Key, Value: h.Value})
		}
		s.held[shareKey{r.Partition, rec.Offset}] = true
		out = append(out, ShareRecord{ConsumedRecord: cr, DeliveryCount: int(r.DeliveryCount), LockDeadline: deadline})
	}
	for _, g := range resp.Gaps {
		for o := g.First; o <= g.Last; o++ {
			s.pending = append(s.pending, &logdv1.ShareAck{Topic: g.Topic, Partition: g.Partition, Offset: o,
				Type: logdv1.ShareAckType_SHARE_ACK_GAP})
		}
	}
	return out
}

// shareAnswer is what exchange needs of a Fetch's or Acknowledge's answer.
type shareAnswer struct {
	status  logdv1.ShareStatus
	message string
	acks    []*logdv1.ShareAckResult
}

// exchange makes one call with the session's next epoch and the pending
// acknowledgements. A lost session is opened again (epoch 0) and the call
// made once more without the acknowledgements, which are reported as not
// applied (the records come back when their locks expire). It returns
// the call's error, or a *ShareAckError (first) for acknowledgements
// not applied.
func (s *ShareConsumer) exchange(ctx context.Context, wait time.Duration,
	fn func(ctx context.Context, cc *grpc.ClientConn, epoch int32, acks []*logdv1.ShareAck) (shareAnswer, error)) (ackErr, err error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrShareConsumerClosed
	}
	epoch, acks := s.epoch, s.pending
	s.pending = nil
	s.mu.Unlock()
	if epoch == 0 && len(acks) > 0 {
		ackErr = &ShareAckError{Topic: s.topic, Partition: -1, Message: "no share session to acknowledge in"}
		acks = nil
	}
	for range 2 {
		var a shareAnswer
		err = s.c.unaryOnce(withServerWait(ctx, wait), func(ctx context.Context, cc *grpc.ClientConn) error {
			var err error
			a, err = fn(ctx, cc, epoch, acks)
			return err
		})
		if err != nil {
			s.resetSession() // the call may or may not have moved the session on
			return ackErr, err
		}
		switch a.status {
		case logdv1.ShareStatus_SHARE_STATUS_OK:
			s.mu.Lock()
			s.epoch = nextShareEpoch(epoch)
			s.mu.Unlock()
			return firstAckError(ackErr, a.acks), nil
		case logdv1.ShareStatus_SHARE_STATUS_SESSION_NOT_FOUND, logdv1.ShareStatus_SHARE_STATUS_INVALID_SESSION_EPOCH:
			if len(acks) > 0 && ackErr == nil {
				ackErr = &ShareAckError{Topic: s.topic, Partition: -1, Message: a.message}
			}
			epoch, acks = 0, nil
			continue
		default:
			return ackErr, fmt.Errorf("share group %s: %s (%s)", s.group, a.message, a.status)
		}
	}
	return ackErr, fmt.Errorf("share group %s: could not open a share session", s.group)
}

func (s *ShareConsumer) resetSession() {
	s.mu.Lock()
	s.epoch = 0
	s.mu.Unlock()
}

func nextShareEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

func firstAckError(prev error, rs []*logdv1.ShareAckResult) error {
	if prev != nil {
		return prev
	}
	for _, r := range rs {
		if r.Status != logdv1.ShareStatus_SHARE_STATUS_OK {
			return &ShareAckError{Topic: r.Topic, Partition: r.Partition, Message: r.Message}
		}
	}
	return nil
}
