package torture

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// txnRun is a Run's transactional workload (nil: none).
type txnRun struct{ tw *TxnWorkload }

// setupTxn creates cfg's topic beside w's (nil cfg: no transactional
// workload), unless an earlier step of the setup failed with err. The
// clients log into reportDir's txnLogDir unless cfg names a LogDir.
func setupTxn(ctx context.Context, w *Workload, cfg *TxnConfig, reportDir string, err error) (*txnRun, error) {
	if err != nil || cfg == nil {
		return nil, err
	}
	c := *cfg
	if c.LogDir == "" && reportDir != "" {
		c.LogDir = filepath.Join(reportDir, txnLogDir)
	}
	r := &txnRun{tw: NewTxnWorkload(w, c)}
	if err := r.tw.Setup(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *txnRun) run(ctx context.Context) {
	if r != nil {
		r.tw.Run(ctx)
	}
}

func (r *txnRun) wait() {
	if r != nil {
		r.tw.Wait()
	}
}

// finalRead runs the final reads, within 2 minutes (an abandoned
// transaction is aborted within txnTimeout); a failure is one of rep's
// errors.
func (r *txnRun) finalRead(ctx context.Context, rep *Report) {
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := r.tw.FinalRead(ctx); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
}

// judge adds CheckTxn's verdict to rep and writes the history into dir
// (txn-history.json.gz). Call it after Report.check.
func (r *txnRun) judge(rep *Report, dir string) error {
	if r == nil {
		return nil
	}
	logErr := r.tw.CloseLogs()
	if r.tw.cfg.LogDir != "" {
		rep.Files = append(rep.Files, r.tw.cfg.LogDir)
	}
	h := r.tw.History()
	v := CheckTxn(h)
	rep.Verdicts = append(rep.Verdicts, v)
	rep.Valid = rep.Valid && v.OK()
	path := filepath.Join(dir, "txn-history.json.gz")
	rep.Files = append(rep.Files, path)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	if err := json.NewEncoder(zw).Encode(h); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return errors.Join(f.Close(), logErr)
}
