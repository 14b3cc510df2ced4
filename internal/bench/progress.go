package bench

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progress is a progress bar on stderr. Counting is an atomic add; the bar
// is redrawn from the count a few times a second, off the hot path.
type progress struct {
	n    atomic.Int64
	p    *mpb.Progress
	bar  *mpb.Bar
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

func newProgress(w io.Writer, name string, total int64) *progress {
	pr := &progress{done: make(chan struct{})}
	if w == nil {
		return pr
	}
	pr.p = mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithWidth(40))
	pr.bar = pr.p.AddBar(total,
		mpb.PrependDecorators(decor.Name(name+" "), decor.CountersNoUnit("%d / %d")),
		mpb.AppendDecorators(decor.Percentage(), decor.Name(" "), decor.AverageSpeed(0, "%.0f rec/s")),
	)
	pr.wg.Add(1)
	go func() {
		defer pr.wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				pr.bar.SetCurrent(pr.n.Load())
			case <-pr.done:
				return
			}
		}
	}()
	return pr
}

func (pr *progress) add(n int64) { pr.n.Add(n) }

// stop draws the final count and removes the bar's goroutines.
func (pr *progress) stop() {
	pr.once.Do(func() {
		close(pr.done)
		pr.wg.Wait()
		if pr.bar == nil {
			return
		}
		pr.bar.SetCurrent(pr.n.Load())
		pr.bar.SetTotal(-1, true)
		pr.p.Wait()
	})
}
