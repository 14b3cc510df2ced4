package share

import "fmt"

// Ack is one acknowledgement batch: the offsets First..Last and either one
// type for all of them or one per offset (KIP-932's AcknowledgementBatch).
type Ack struct {
	First, Last int64
	Types       []AckType
}

func (a Ack) typeOf(o int64) AckType {
	if len(a.Types) == 1 {
		return a.Types[0]
	}
	return a.Types[o-a.First]
}

// Acknowledge applies member's acknowledgement batches at now, all or
// none: it first checks every batch (well formed, in ascending order,
// not overlapping: ErrInvalidAck) and every offset named (acquired by
// member, lock not expired: ErrInvalidRecordState), and only then
// applies them. It reports whether the encoded state changed (a release
// or a renewal changes only locks).
func (p *Partition) Acknowledge(member string, now int64, acks []Ack) (bool, error) {
	return p.AcknowledgeWithReasons(member, now, acks, nil)
}

// AcknowledgeWithReasons is Acknowledge with the member's last error for
// offsets it rejects (reasons[offset]), which a dead-lettered record
// carries (Config.DeadLetter).
func (p *Partition) AcknowledgeWithReasons(member string, now int64, acks []Ack, reasons map[int64]string) (bool, error) {
	p.Expire(now)
	if err := p.checkAcks(member, acks); err != nil {
		return false, err
	}
	changed := false
	for _, a := range acks {
		for o := a.First; o <= a.Last; o++ {
			r := &p.recs[o-p.start]
			switch a.typeOf(o) {
			case Accept:
				r.state, r.owner, r.deadline = Acknowledged, "", 0
				changed = true
			case Gap:
				r.state, r.owner, r.deadline = Archived, "", 0
				changed = true
			case Reject:
				r.owner, r.deadline = "", 0
				p.finish(r, reasons[o])
				changed = true
			case Release:
				p.release(r, now)
			case Renew:
				r.deadline = now + p.cfg.LockDurationMs
			}
		}
	}
	p.advance()
	return changed, nil
}

func (p *Partition) checkAcks(member string, acks []Ack) error {
	prev := int64(-1)
	for _, a := range acks {
		if a.First < 0 || a.First > a.Last || a.First <= prev {
			return fmt.Errorf("%w: batch %d..%d (after %d)", ErrInvalidAck, a.First, a.Last, prev)
		}
		prev = a.Last
		if len(a.Types) != 1 && int64(len(a.Types)) != a.Last-a.First+1 {
			return fmt.Errorf("%w: batch %d..%d has %d types", ErrInvalidAck, a.First, a.Last, len(a.Types))
		}
		for _, t := range a.Types {
			if t < Gap || t > Renew {
				return fmt.Errorf("%w: unknown acknowledge type %d", ErrInvalidAck, t)
			}
		}
		if a.First < p.start || a.Last >= p.End() {
			return fmt.Errorf("%w: offsets %d..%d outside the window %d..%d", ErrInvalidRecordState, a.First, a.Last, p.start, p.End())
		}
		for o := a.First; o <= a.Last; o++ {
			if r := p.recs[o-p.start]; r.state != Acquired || r.owner != member {
				return fmt.Errorf("%w: offset %d is %s", ErrInvalidRecordState, o, r.state)
			}
		}
	}
	return nil
}
