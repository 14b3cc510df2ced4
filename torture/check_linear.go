package torture

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// LinearizableOptions configure CheckLinearizable.
type LinearizableOptions struct {
	// Timeout bounds porcupine's search per partition (default 60s); when it
	// runs out the verdict is Inconclusive.
	Timeout time.Duration
	// VisualizeDir, when set, receives porcupine's HTML visualization of
	// each partition whose history is not linearizable.
	VisualizeDir string
}

// CheckLinearizable checks, per partition, that the produces and reads are
// linearizable against the append-only log model (model.go), with
// porcupine. For a failure it names a two-operation witness when a direct
// one exists (an append ordered after another yet given a lower offset, a
// read that saw a record before its append began, a read that missed a
// record appended before it began) and otherwise the operations pending
// where porcupine's longest linearization stops. Counts: partitions,
// operations checked, partitions not linearizable.
func CheckLinearizable(ops []Op, opts LinearizableOptions) *Verdict {
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	v := newVerdict("linearizable")
	parts := map[int32]bool{}
	for _, op := range ops {
		if (op.Kind == OpProduce && op.Outcome == OutcomeOK) || (op.Kind == OpRead && op.Outcome == OutcomeOK) {
			parts[op.Partition] = true
		}
	}
	v.Counts["not_linearizable"] = 0
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		h := partitionHistory(ops, p)
		v.Counts["partitions"]++
		v.Counts["operations"] += len(h.ops)
		model := partitionModel(p, h.at, h.start)
		res, info := porcupine.CheckOperationsVerbose(model, h.ops, opts.Timeout)
		switch res {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			v.inconclusive("partition %d: porcupine found no answer within %s (%d operations)", p, opts.Timeout, len(h.ops))
			continue
		}
		v.Counts["not_linearizable"]++
		witness, why := h.explain()
		if witness == nil {
			witness, why = h.frontier(info)
		}
		v.fail(witness, "partition %d is not linearizable: %s", p, why)
		if opts.VisualizeDir != "" {
			path := filepath.Join(opts.VisualizeDir, fmt.Sprintf("linearizability-partition-%d.html", p))
			if err := os.MkdirAll(opts.VisualizeDir, 0o755); err == nil {
				err = porcupine.VisualizePath(model, info, path)
				if err == nil {
					v.Artifacts = append(v.Artifacts, path)
				}
			}
		}
	}
	return v
}

// linearHistory is one partition's history in porcupine's terms.
type linearHistory struct {
	ops    []porcupine.Operation
	source []Op             // source[i] is ops[i]'s operation
	at     map[int64]string // offset -> value, from acks then reads
	// start is the first offset checked: 0, or past the last offset the
	// final read skipped (retention removed it) whose append is not in the
	// history (a produce of unknown outcome nobody read). The check covers
	// the suffix from start (appends below it dropped, reads cut to it),
	// which is sound: in any linearization of the whole history the
	// appends below start come first.
	start int64
}

// partitionHistory builds partition p's porcupine history: acknowledged
// produces, produces of unknown outcome whose value some read saw (at that
// offset, completing at the end of time), and successful reads.
func partitionHistory(ops []Op, p int32) *linearHistory {
	h := &linearHistory{at: map[int64]string{}}
	readAt, end := h.values(ops, p)
	h.start = historyStart(ops, p, h.at, readAt)
	clients := map[int]int{}
	client := func(proc int) int {
		id, ok := clients[proc]
		if !ok {
			id = len(clients)
			clients[proc] = id
		}
		return id
	}
	add := func(op Op, in logInput, out logOutput, ret int64) {
		h.ops = append(h.ops, porcupine.Operation{ClientId: client(op.Process), Input: in, Output: out, Call: op.Invoke, Return: ret})
		h.source = append(h.source, op)
	}
	for _, op := range ops {
		switch {
		case op.Kind == OpProduce && op.Acked() && op.Partition == p:
			if op.Offset >= h.start {
				add(op, logInput{append: true, value: op.Value}, logOutput{offset: op.Offset}, op.Complete)
			}
		case op.Kind == OpProduce && !op.Acked():
			if off, ok := readAt[op.Value]; ok && off >= h.start {
				add(op, logInput{append: true, value: op.Value}, logOutput{offset: off, unknown: true}, end+1)
			}
		case op.Kind == OpRead && op.Outcome == OutcomeOK && op.Partition == p:
			from, recs := op.From, op.Records
			for len(recs) > 0 && recs[0].Offset < h.start {
				recs = recs[1:]
				from++
			}
			if from < h.start {
				if len(recs) > 0 || len(op.Records) == 0 {
					continue // all below start, or an empty read below it
				}
				from = h.start
			}
			add(op, logInput{from: from}, logOutput{records: recs}, op.Complete)
		}
	}
	return h
}

// values fills in h.at, the value at each offset of partition p (acknowledged
// at it, or read there), and returns the offset where each value was first
// read and the end of time (the last completion).
func (h *linearHistory) values(ops []Op, p int32) (readAt map[string]int64, end int64) {
	readAt = map[string]int64{}
	for _, op := range ops {
		end = max(end, op.Complete)
		if op.Partition != p {
			continue
		}
		if op.Acked() {
			if _, ok := h.at[op.Offset]; !ok {
				h.at[op.Offset] = op.Value
			}
		}
	}
	for _, op := range ops {
		if op.Kind != OpRead || op.Outcome != OutcomeOK || op.Partition != p {
			continue
		}
		for _, r := range op.Records {
			if _, ok := h.at[r.Offset]; !ok {
				h.at[r.Offset] = r.Value
			}
			if _, ok := readAt[r.Value]; !ok {
				readAt[r.Value] = r.Offset
			}
		}
	}
	return readAt, end
}

// historyStart is the first offset of partition p the history checks:
// past every offset that holds a value without its append, when retention
// removed the record before anyone read it.
func historyStart(ops []Op, p int32, at map[int64]string, readAt map[string]int64) int64 {
	known := map[int64]bool{}
	for _, op := range ops {
		switch {
		case op.Acked() && op.Partition == p:
			known[op.Offset] = true
		case op.Kind == OpProduce && !op.Acked():
			if off, ok := readAt[op.Value]; ok {
				known[off] = true
			}
		}
	}
	var top int64 = -1
	for off := range at {
		top = max(top, off)
	}
	_, finals := finalReads(ops)
	var start int64
	for off := int64(0); off <= top; off++ {
		if !known[off] && skipped(finals[p], off) {
			start = off + 1
		}
	}
	return start
}

// explain looks for a direct two-operation witness of non-linearizability.
func (h *linearHistory) explain() ([]Op, string) {
	type app struct {
		offset    int64
		call, ret int64
		op        Op
	}
	byOffset := map[int64]*app{}
	var apps []*app
	for i, o := range h.ops {
		in, out := o.Input.(logInput), o.Output.(logOutput)
		if !in.append {
			continue
		}
		if prev, ok := byOffset[out.offset]; ok {
			return []Op{prev.op, h.source[i]}, fmt.Sprintf("two appends at offset %d", out.offset)
		}
		a := &app{offset: out.offset, call: o.Call, ret: o.Return, op: h.source[i]}
		byOffset[out.offset] = a
		apps = append(apps, a)
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].offset < apps[j].offset })
	// minRet[i]: the append completing first among apps[i:].
	minRet := make([]*app, len(apps)+1)
	for i := len(apps) - 1; i >= 0; i-- {
		minRet[i] = apps[i]
		if next := minRet[i+1]; next != nil && next.ret < apps[i].ret {
			minRet[i] = next
		}
	}
	for i, a := range apps {
		if want := h.start + int64(i); a.offset != want {
			return []Op{a.op}, fmt.Sprintf("no append took offset %d, yet %s is at %d", want, a.op.Value, a.offset)
		}
		if later := minRet[i+1]; later != nil && later.ret < a.call {
			return []Op{later.op, a.op}, fmt.Sprintf("%s was acknowledged at offset %d before %s was produced, which got the lower offset %d",
				later.op.Value, later.offset, a.op.Value, a.offset)
		}
	}
	for i, o := range h.ops {
		in, out := o.Input.(logInput), o.Output.(logOutput)
		if in.append {
			continue
		}
		r := h.source[i]
		if len(out.records) == 0 {
			if i := in.from - h.start; i >= 0 && i < int64(len(apps)) {
				if first := minRet[i]; first != nil && first.ret < o.Call {
					return []Op{first.op, r}, fmt.Sprintf("a read at %d began after %s was acknowledged at %d, and returned nothing",
						in.from, first.op.Value, first.offset)
				}
			}
			continue
		}
		for _, rec := range out.records {
			if h.at[rec.Offset] != rec.Value {
				return []Op{r}, fmt.Sprintf("a read returned %s at %d, where %s is", rec.Value, rec.Offset, h.at[rec.Offset])
			}
			a, ok := byOffset[rec.Offset]
			if !ok {
				return []Op{r}, fmt.Sprintf("a read returned %s at %d, which no produce appended", rec.Value, rec.Offset)
			}
			if a.call > o.Return {
				return []Op{r, a.op}, fmt.Sprintf("a read returned %s at %d before its produce began", rec.Value, rec.Offset)
			}
		}
	}
	return nil, ""
}

// frontier returns the operations pending where porcupine's longest partial
// linearization stops: its last linearized operation and those not
// linearized that were invoked before the first of them returned.
func (h *linearHistory) frontier(info porcupine.LinearizationInfo) ([]Op, string) {
	var longest []int
	for _, part := range info.PartialLinearizations() {
		for _, lin := range part {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
	}
	done := make([]bool, len(h.ops))
	for _, i := range longest {
		done[i] = true
	}
	firstRet := int64(1<<63 - 1)
	for i, o := range h.ops {
		if !done[i] {
			firstRet = min(firstRet, o.Return)
		}
	}
	var w []Op
	if len(longest) > 0 {
		w = append(w, h.source[longest[len(longest)-1]])
	}
	for i, o := range h.ops {
		if !done[i] && o.Call <= firstRet && len(w) < 20 {
			w = append(w, h.source[i])
		}
	}
	return w, fmt.Sprintf("porcupine linearized %d of %d operations; the witness lists the operations pending where it stopped", len(longest), len(h.ops))
}
