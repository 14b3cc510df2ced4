package share

import (
	"cmp"
	"fmt"
	"slices"
)

// Dead letters (Config.DeadLetter). A record rejected, or out of
// deliveries, becomes DeadLettering with the next dead-letter sequence of
// its share partition; the state that says so is stored before anything
// is appended. The broker then appends each DeadLettering record, in
// sequence order, to the dead-letter topic as an idempotent writer whose
// producer id is the share partition's and whose batch sequence is the
// record's, and only after the append calls DeadLettered, which archives
// it. A retry after a crash or a failover (the new leader loads the same
// records with the same sequences) is a duplicate the dead-letter
// partition answers without storing it again; a record DeadLettering is
// never acquired, so it is never both dead-lettered and redelivered.

// ErrNotDeadLettering: DeadLettered names a record that is not waiting
// for its dead-letter append.
var ErrNotDeadLettering = fmt.Errorf("share: record is not dead-lettering")

// DeadLetter is a record waiting for its dead-letter append.
type DeadLetter struct {
	Offset        int64
	DeliveryCount int16
	Sequence      int32  // the dead-letter writer's batch sequence
	Reason        string // the member's last error, "" when none
}

// finish makes r final: DeadLettering with the next sequence when dead
// letters are on, else Archived.
func (p *Partition) finish(r *record, reason string) {
	if !p.cfg.DeadLetter {
		r.state = Archived
		return
	}
	r.state, r.seq, r.reason = DeadLettering, p.dlqNext, reason
	p.dlqNext++
}

// DeadLetters are the records waiting for their dead-letter append, in
// sequence order (the order to append them in).
func (p *Partition) DeadLetters() []DeadLetter {
	var out []DeadLetter
	for i := range p.recs {
		if r := &p.recs[i]; r.state == DeadLettering {
			out = append(out, DeadLetter{Offset: p.start + int64(i), DeliveryCount: r.count, Sequence: r.seq, Reason: r.reason})
		}
	}
	slices.SortFunc(out, func(a, b DeadLetter) int { return cmp.Compare(a.Sequence, b.Sequence) })
	return out
}

// DeadLettered archives offset o once its dead-letter append is stored.
func (p *Partition) DeadLettered(o int64) error {
	if o < p.start || o >= p.End() || p.recs[o-p.start].state != DeadLettering {
		return fmt.Errorf("%w: offset %d", ErrNotDeadLettering, o)
	}
	r := &p.recs[o-p.start]
	r.state, r.reason = Archived, ""
	p.advance()
	return nil
}

// DeadLetterSequence is the sequence the next dead letter gets.
func (p *Partition) DeadLetterSequence() int32 { return p.dlqNext }

// SetDeadLetterSequence continues another state's dead-letter sequence in
// this one (a share partition started again at another offset): the
// writer's sequences must go on, never repeat.
func (p *Partition) SetDeadLetterSequence(n int32) { p.dlqNext = n }
