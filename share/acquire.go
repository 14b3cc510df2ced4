package share

// Range is a run of offsets acquired with one delivery count, as
// ShareFetch's AcquiredRecords reports them.
type Range struct {
	First, Last   int64
	DeliveryCount int16
}

// Acquirable is the lowest offset an Acquire at now could hand out: the
// first available record in the window (whose key no earlier record
// holds, with KeyOrdering), else End when the window has room. ok is
// false when nothing can be acquired until a record is done or a lock
// expires. The caller reads its log from there and passes the end of
// what it read to Acquire.
func (p *Partition) Acquirable(now int64) (offset int64, ok bool) {
	p.Expire(now)
	l := p.lanes()
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Available && r.availableAt == 0 && l.free(r) {
			return p.start + int64(i), true
		}
		l.pass(r)
	}
	if end := p.End(); end < p.start+p.cfg.MaxInFlight {
		return end, true
	}
	return 0, false
}

// Acquire locks up to max available records below upTo for member until
// now + LockDurationMs, lowest offsets first, adding one to each one's
// delivery count, and returns them as ranges. upTo is the end of the log
// the caller has read (never past its high watermark): offsets from End
// to upTo enter the window, never one at or past Start+MaxInFlight, with
// their keys from keys (nil when KeyOrdering is off). With KeyOrdering a
// record whose key an earlier record in flight holds is passed over.
func (p *Partition) Acquire(member string, now int64, max int, upTo int64, keys Keys) []Range {
	p.Expire(now)
	if lim := p.start + p.cfg.MaxInFlight; upTo > lim {
		upTo = lim
	}
	var out []Range
	deadline := now + p.cfg.LockDurationMs
	defer p.advance()
	l := p.lanes()
	for o := p.start; o < upTo && max > 0; o++ {
		if o == p.End() {
			p.recs = append(p.recs, record{key: learn(keys, o)})
		}
		r := &p.recs[o-p.start]
		if r.state != Available || r.availableAt > now || !l.free(r) {
			l.pass(r)
			continue
		}
		if r.count >= p.cfg.DeliveryLimit { // the limit was lowered
			p.finish(r, "")
			continue
		}
		l.pass(r)
		r.state, r.owner, r.deadline, r.availableAt = Acquired, member, deadline, 0
		r.count++
		max--
		if n := len(out); n > 0 && out[n-1].Last == o-1 && out[n-1].DeliveryCount == r.count {
			out[n-1].Last = o
			continue
		}
		out = append(out, Range{First: o, Last: o, DeliveryCount: r.count})
	}
	return out
}

// ReleaseMember releases at now every record member holds (it left, or
// its session closed) and reports whether it held any.
func (p *Partition) ReleaseMember(member string, now int64) bool {
	changed := false
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && r.owner == member {
			p.release(r, now)
			changed = true
		}
	}
	if changed {
		p.advance()
	}
	return changed
}

// Counts are the window's records by state: available (in the window,
// those waiting out a redelivery backoff included), acquired, and in flight (the window's length, done records above Start
// included).
func (p *Partition) Counts() (available, acquired, inFlight int) {
	for i := range p.recs {
		switch p.recs[i].state {
		case Available:
			available++
		case Acquired:
			acquired++
		}
	}
	return available, acquired, len(p.recs)
}
