package share

import (
	"encoding/binary"
	"fmt"
)

const encVersion = 1

// maxDecodedWindow bounds the window Decode accepts, so corrupt bytes
// cannot ask for a huge allocation.
const maxDecodedWindow = 1 << 24

// durable is how a record is encoded: a lock is not kept.
func (p *Partition) durable(r record) (State, int16) {
	if r.state != Acquired {
		return r.state, r.count
	}
	if r.count >= p.cfg.DeliveryLimit {
		return Archived, r.count
	}
	return Available, r.count
}

// Encode returns the window's durable state (see the package comment).
func (p *Partition) Encode() []byte {
	type run struct {
		n     uint64
		state State
		count int16
	}
	var runs []run
	for _, r := range p.recs {
		s, c := p.durable(r)
		if k := len(runs); k > 0 && runs[k-1].state == s && runs[k-1].count == c {
			runs[k-1].n++
			continue
		}
		runs = append(runs, run{1, s, c})
	}
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(runs)*(2+binary.MaxVarintLen64))
	b = append(b, encVersion)
	b = binary.AppendVarint(b, p.start)
	b = binary.AppendUvarint(b, uint64(len(p.recs)))
	b = binary.AppendUvarint(b, uint64(len(runs)))
	for _, r := range runs {
		b = binary.AppendUvarint(b, r.n)
		b = append(b, byte(r.state))
		b = binary.AppendUvarint(b, uint64(r.count))
	}
	return b
}

// Decode reads what Encode wrote, with cfg's settings. A record encoded
// available with a count at the limit is archived (its lock was lost at
// the limit).
func Decode(b []byte, cfg Config) (*Partition, error) {
	d := decoder{b: b}
	if v := d.byte(); v != encVersion {
		return nil, fmt.Errorf("%w: version %d", ErrCorrupt, v)
	}
	p := New(0, cfg)
	p.start = d.varint()
	n := d.uvarint()
	runs := d.uvarint()
	if d.err != nil || p.start < 0 || n > maxDecodedWindow || runs > n {
		return nil, fmt.Errorf("%w: header (start %d, length %d, runs %d)", ErrCorrupt, p.start, n, runs)
	}
	p.recs = make([]record, 0, n)
	for i := uint64(0); i < runs; i++ {
		k, s, c := d.uvarint(), State(d.byte()), d.uvarint()
		if d.err != nil || k == 0 || uint64(len(p.recs))+k > n || s >= numStates || c > 1<<15-1 {
			return nil, fmt.Errorf("%w: run %d", ErrCorrupt, i)
		}
		r := record{state: s, count: int16(c)}
		if s == Available {
			r.state = Acquired // durable decides: available, or archived at the limit
		}
		r.state, r.count = p.durable(r)
		for j := uint64(0); j < k; j++ {
			p.recs = append(p.recs, r)
		}
	}
	if uint64(len(p.recs)) != n || len(d.b) != 0 {
		return nil, fmt.Errorf("%w: runs cover %d of %d offsets, %d bytes left", ErrCorrupt, len(p.recs), n, len(d.b))
	}
	p.advance()
	return p, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.err = ErrCorrupt
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = ErrCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = ErrCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}
