package share

import (
	"encoding/binary"
	"fmt"
)

// The encodings: version 1 without dead letters, version 2 with the
// dead-letter sequences (written only once a record was dead-lettered,
// so a state without dead letters reads on a node that knows version 1
// only), version 3 with them and the reasons of the records waiting for
// their dead-letter append (written only while one has a reason).
const (
	encVersion        = 1
	encVersionDL      = 2
	encVersionReasons = 3
)

// MaxReasonBytes bounds a reason Decode accepts (the broker cuts a
// member's reason shorter before it is kept); MaxStoredReasonBytes the
// reasons one encoded state stores (storedReasons).
const (
	MaxReasonBytes       = 4096
	MaxStoredReasonBytes = 64 << 10
)

// maxDecodedWindow bounds the window Decode accepts, so corrupt bytes
// cannot ask for a huge allocation.
const maxDecodedWindow = 1 << 24

// durable is how a record is encoded: a lock is not kept. A record
// acquired at the limit is encoded as what its lock's loss makes it:
// archived, or with dead letters on available at the limit, which Decode
// makes DeadLettering (with a sequence it assigns).
func (p *Partition) durable(r record) (State, int16) {
	if r.state != Acquired {
		return r.state, r.count
	}
	if r.count >= p.cfg.DeliveryLimit && !p.cfg.DeadLetter {
		return Archived, r.count
	}
	return Available, r.count
}

type encRun struct {
	n     uint64
	state State
	count int16
	seq   int32 // DeadLettering: the first record's; the others follow
}

func (p *Partition) runs() []encRun {
	var runs []encRun
	for _, r := range p.recs {
		s, c := p.durable(r)
		if k := len(runs); k > 0 && runs[k-1].state == s && runs[k-1].count == c &&
			(s != DeadLettering || runs[k-1].seq+int32(runs[k-1].n) == r.seq) {
			runs[k-1].n++
			continue
		}
		runs = append(runs, encRun{1, s, c, r.seq})
	}
	return runs
}

// Encode returns the window's durable state (see the package comment).
func (p *Partition) Encode() []byte {
	runs := p.runs()
	b := make([]byte, 0, 1+4*binary.MaxVarintLen64+len(runs)*(2+2*binary.MaxVarintLen64))
	reasons := p.storedReasons()
	v := byte(encVersion)
	switch {
	case len(reasons) > 0:
		v = encVersionReasons
	case p.dlqNext != 0:
		v = encVersionDL
	}
	b = append(b, v)
	b = binary.AppendVarint(b, p.start)
	b = binary.AppendUvarint(b, uint64(len(p.recs)))
	if v >= encVersionDL {
		b = binary.AppendUvarint(b, uint64(p.dlqNext))
	}
	b = binary.AppendUvarint(b, uint64(len(runs)))
	for _, r := range runs {
		b = binary.AppendUvarint(b, r.n)
		b = append(b, byte(r.state))
		b = binary.AppendUvarint(b, uint64(r.count))
		if v >= encVersionDL && r.state == DeadLettering {
			b = binary.AppendUvarint(b, uint64(r.seq))
		}
	}
	if v == encVersionReasons {
		b = binary.AppendUvarint(b, uint64(len(reasons)))
		for _, i := range reasons {
			r := &p.recs[i]
			b = binary.AppendUvarint(b, uint64(i))
			b = binary.AppendUvarint(b, uint64(len(r.reason)))
			b = append(b, r.reason...)
		}
	}
	return b
}

// storedReasons are the indexes of the DeadLettering records whose
// reasons Encode stores: in offset order, while their bytes add up to at
// most MaxStoredReasonBytes (the whole state is written at every change,
// so the reasons of a long list waiting for a dead-letter topic that
// does not take appends would make each write large; past the bound a
// reason lives in memory only, and a dead letter appended by another
// node carries none).
func (p *Partition) storedReasons() []int {
	var out []int
	total := 0
	for i := range p.recs {
		if r := &p.recs[i]; r.state == DeadLettering && r.reason != "" {
			if total += len(r.reason); total > MaxStoredReasonBytes {
				break
			}
			out = append(out, i)
		}
	}
	return out
}

// Decode reads what Encode wrote, with cfg's settings. A record encoded
// available with a count at the limit is final (its lock was lost at the
// limit): archived, or DeadLettering with the next sequences in offset
// order when cfg has dead letters on.
func Decode(b []byte, cfg Config) (*Partition, error) {
	d := decoder{b: b}
	v := d.byte()
	if v != encVersion && v != encVersionDL && v != encVersionReasons {
		return nil, fmt.Errorf("%w: version %d", ErrCorrupt, v)
	}
	p := New(0, cfg)
	p.start = d.varint()
	n := d.uvarint()
	if v >= encVersionDL {
		next := d.uvarint()
		if next > 1<<31-1 {
			d.err = ErrCorrupt
		}
		p.dlqNext = int32(next)
	}
	runs := d.uvarint()
	if d.err != nil || p.start < 0 || n > maxDecodedWindow || runs > n {
		return nil, fmt.Errorf("%w: header (start %d, length %d, runs %d)", ErrCorrupt, p.start, n, runs)
	}
	p.recs = make([]record, 0, n)
	for i := uint64(0); i < runs; i++ {
		if err := p.decodeRun(&d, v, n); err != nil {
			return nil, fmt.Errorf("%w: run %d", err, i)
		}
	}
	if v == encVersionReasons {
		if err := p.decodeReasons(&d); err != nil {
			return nil, err
		}
	}
	if uint64(len(p.recs)) != n || len(d.b) != 0 {
		return nil, fmt.Errorf("%w: runs cover %d of %d offsets, %d bytes left", ErrCorrupt, len(p.recs), n, len(d.b))
	}
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Available && r.count >= p.cfg.DeliveryLimit {
			p.finish(r, "")
		}
	}
	p.advance()
	return p, nil
}

// decodeReasons reads the reasons of DeadLettering records, each named
// once, in offset order.
func (p *Partition) decodeReasons(d *decoder) error {
	k := d.uvarint()
	if d.err != nil || k > uint64(len(p.recs)) {
		return fmt.Errorf("%w: %d reasons", ErrCorrupt, k)
	}
	next := uint64(0)
	for range k {
		i, n := d.uvarint(), d.uvarint()
		if d.err != nil || i < next || i >= uint64(len(p.recs)) || p.recs[i].state != DeadLettering ||
			n == 0 || n > MaxReasonBytes || n > uint64(len(d.b)) {
			return fmt.Errorf("%w: a reason (index %d, %d bytes)", ErrCorrupt, i, n)
		}
		p.recs[i].reason = string(d.b[:n])
		d.b = d.b[n:]
		next = i + 1
	}
	return nil
}

func (p *Partition) decodeRun(d *decoder, v byte, n uint64) error {
	k, s, c := d.uvarint(), State(d.byte()), d.uvarint()
	var seq uint64
	if v >= encVersionDL && s == DeadLettering {
		seq = d.uvarint()
	}
	if d.err != nil || k == 0 || uint64(len(p.recs))+k > n || s >= numStates || c > 1<<15-1 ||
		(s == DeadLettering && (v < encVersionDL || seq+k > uint64(p.dlqNext))) {
		return ErrCorrupt
	}
	if s == Acquired { // never written: a lock is not stored
		s = Available
	}
	for j := uint64(0); j < k; j++ {
		p.recs = append(p.recs, record{state: s, count: int16(c), seq: int32(seq + j)})
	}
	return nil
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
