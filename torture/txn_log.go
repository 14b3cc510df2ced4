package torture

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// txnLogDir is the directory, in a run's report directory, where the
// transactional workload's clients log.
const txnLogDir = "txn-clients"

// txnLogs gives each client of the transactional workload franz-go's
// logger at Info level, writing to a file of its own in dir (one per
// client instance: a producer's transactional id and instance, or the
// reader), so that what a client decided (an EndTxn it sent or skipped,
// a producer id it reloaded, a coordinator it moved to) can be matched
// against the history and the nodes' logs. No dir: no logging.
type txnLogs struct {
	dir   string
	mu    sync.Mutex
	files []*os.File
	err   error // the first file that could not be made
}

// opts are the client options that log as name (none when nothing
// logs).
func (l *txnLogs) opts(name string) []kgo.Opt {
	if lg := l.logger(name); lg != nil {
		return []kgo.Opt{kgo.WithLogger(lg)}
	}
	return nil
}

// logger logs as name into a file of its own, lines stamped with the
// wall clock (UTC, as the nodes' logs); nil when nothing logs.
func (l *txnLogs) logger(name string) kgo.Logger {
	if l == nil || l.dir == "" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		l.err = cmpErrFirst(l.err, err)
		return nil
	}
	f, err := os.OpenFile(filepath.Join(l.dir, safeLogName(name)+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		l.err = cmpErrFirst(l.err, err)
		return nil
	}
	l.files = append(l.files, f)
	return kgo.BasicLogger(f, kgo.LogLevelInfo, func() string {
		return time.Now().UTC().Format("2006-01-02T15:04:05.000000Z ")
	})
}

// close closes every file and returns the first error met, a file that
// could not be made included.
func (l *txnLogs) close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	errs := []error{l.err}
	for _, f := range l.files {
		errs = append(errs, f.Close())
	}
	l.files, l.err = nil, nil
	return errors.Join(errs...)
}

func cmpErrFirst(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// safeLogName is name as a file name: path separators replaced.
func safeLogName(name string) string {
	return strings.NewReplacer("/", "_", string(os.PathSeparator), "_").Replace(name)
}

// producerLogName names a producer instance's log.
func producerLogName(txnID string, instance int) string {
	return fmt.Sprintf("producer-%s-%d", txnID, instance)
}
