package partition

// Appended reports where producer pid's batch of epoch starting at
// sequence first was appended, when the partition still remembers it (its
// producer's recent batches): a retry of a conditional write whose first
// attempt was stored is answered with that attempt, though its condition
// no longer holds (the first attempt changed what it tested).
func (p *Partition) Appended(pid int64, epoch int16, first int32) (AppendResult, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.producers[pid]
	if !ok || st.lastSeq < 0 || st.epoch != epoch {
		return AppendResult{}, false
	}
	for _, r := range st.recent {
		if r.firstSeq == first {
			return AppendResult{BaseOffset: r.base, LastOffset: r.last, Duplicate: true}, true
		}
	}
	return AppendResult{}, false
}
