package torture

import (
	"context"
	"path/filepath"
)

// kvViewRun is a Run's key-value view workload; its methods do nothing on
// nil (a run without one).
type kvViewRun struct {
	vw  *KVViewWorkload
	h   *ViewHistory
	lin LinearizableOptions
}

// setupKVView creates cfg's topic beside w's (nil cfg: no view workload).
func setupKVView(ctx context.Context, w *Workload, h *History, cfg *KVViewConfig, lin LinearizableOptions) (*kvViewRun, error) {
	if cfg == nil {
		return nil, nil
	}
	r := &kvViewRun{h: NewViewHistory(h), lin: lin}
	r.vw = NewKVViewWorkload(w, r.h, *cfg)
	if err := r.vw.Setup(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *kvViewRun) run(ctx context.Context) {
	if r != nil {
		r.vw.Run(ctx)
	}
}

func (r *kvViewRun) wait() {
	if r != nil {
		r.vw.Wait()
	}
}

// judge adds CheckKVView's verdict to rep and writes the history into dir
// (kv-history.json.gz). Call it after Report.check.
func (r *kvViewRun) judge(rep *Report, dir string) error {
	if r == nil {
		return nil
	}
	ops := r.h.Ops()
	for _, op := range ops {
		if rep.KVView == nil {
			rep.KVView = map[ViewOpKind]map[Outcome]int{}
		}
		if rep.KVView[op.Kind] == nil {
			rep.KVView[op.Kind] = map[Outcome]int{}
		}
		rep.KVView[op.Kind][op.Outcome]++
	}
	v := CheckKVView(ops, r.lin.Timeout, r.lin.VisualizeDir)
	rep.Verdicts = append(rep.Verdicts, v)
	rep.Valid = rep.Valid && v.OK()
	path := filepath.Join(dir, "kv-history.json.gz")
	rep.Files = append(rep.Files, path)
	return r.h.WriteFile(path)
}
