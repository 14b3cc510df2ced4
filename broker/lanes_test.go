package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder notes the order of starts and delivers per key.
type recorder struct {
	mu       sync.Mutex
	started  map[string][]int
	delivers map[string][]int
}

func newRecorder() *recorder {
	return &recorder{started: map[string][]int{}, delivers: map[string][]int{}}
}

// job starts (noted), waits for release, and delivers (noted).
func (r *recorder) job(key string, i int, release <-chan struct{}) LaneJob {
	return &recordedJob{r: r, key: key, i: i, release: release}
}

type recordedJob struct {
	r       *recorder
	key     string
	i       int
	release <-chan struct{}
}

func (j *recordedJob) Start() {
	j.r.mu.Lock()
	j.r.started[j.key] = append(j.r.started[j.key], j.i)
	j.r.mu.Unlock()
}

func (j *recordedJob) Wait() { <-j.release }

func (j *recordedJob) Deliver() {
	j.r.mu.Lock()
	j.r.delivers[j.key] = append(j.r.delivers[j.key], j.i)
	j.r.mu.Unlock()
}

func (r *recorder) get(key string) (started, delivered []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.started[key]), slices.Clone(r.delivers[key])
}

func TestLanesOrderPerKey(t *testing.T) {
	l := NewLanes(16)
	r := newRecorder()
	releases := make([]chan struct{}, 8)
	for i := range releases {
		releases[i] = make(chan struct{})
		if err := l.Admit(context.Background()); err != nil {
			t.Fatal(err)
		}
		l.Dispatch("a", r.job("a", i, releases[i]))
	}
	// Every job starts without waiting for the ones before to finish.
	laneWait(t, "every job started", func() bool { s, _ := r.get("a"); return len(s) == 8 })
	// Release in reverse: delivers still come in dispatch order.
	for i := len(releases) - 1; i >= 0; i-- {
		close(releases[i])
	}
	l.Wait()
	started, delivered := r.get("a")
	want := []int{0, 1, 2, 3, 4, 5, 6, 7}
	if !slices.Equal(started, want) || !slices.Equal(delivered, want) {
		t.Fatalf("started %v, delivered %v, want both %v", started, delivered, want)
	}
}

func TestLanesKeysIndependent(t *testing.T) {
	l := NewLanes(16)
	r := newRecorder()
	blocked := make(chan struct{})
	l.Admit(context.Background())
	l.Dispatch("slow", r.job("slow", 0, blocked))
	free := make(chan struct{})
	close(free)
	for i := range 3 {
		l.Admit(context.Background())
		l.Dispatch("fast", r.job("fast", i, free))
	}
	laneWait(t, "the fast key delivered", func() bool { _, d := r.get("fast"); return len(d) == 3 })
	if _, d := r.get("slow"); len(d) != 0 {
		t.Fatalf("slow delivered %v before its release", d)
	}
	close(blocked)
	l.Wait()
	if _, d := r.get("slow"); !slices.Equal(d, []int{0}) {
		t.Fatalf("slow delivered %v", d)
	}
}

func TestLanesLimit(t *testing.T) {
	l := NewLanes(2)
	r := newRecorder()
	release := make(chan struct{})
	for i := range 2 {
		if err := l.Admit(context.Background()); err != nil {
			t.Fatal(err)
		}
		l.Dispatch(fmt.Sprint(i), r.job(fmt.Sprint(i), i, release))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.Admit(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("admit past the limit: %v, want it to wait until ctx ends", err)
	}
	close(release)
	if err := l.Admit(context.Background()); err != nil {
		t.Fatalf("admit after a job delivered: %v", err)
	}
	l.Dispatch("0", r.job("0", 2, release))
	l.Wait()
	if _, d := r.get("0"); !slices.Equal(d, []int{0, 2}) {
		t.Fatalf("key 0 delivered %v", d)
	}
}

// A lane exits as soon as its queue is empty, even while its last job
// waits; the key's next lane must still deliver after that job.
func TestLanesNextLaneDeliversAfterTail(t *testing.T) {
	l := NewLanes(16)
	r := newRecorder()
	first := make(chan struct{})
	l.Admit(context.Background())
	l.Dispatch("k", r.job("k", 0, first))
	// Wait until the first lane has exited (its queue is empty).
	laneWait(t, "the first lane exited", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		_, ok := l.tails["k"]
		return ok
	})
	free := make(chan struct{})
	close(free)
	l.Admit(context.Background())
	l.Dispatch("k", r.job("k", 1, free))
	time.Sleep(20 * time.Millisecond) // room for a wrong early deliver
	if _, d := r.get("k"); len(d) != 0 {
		t.Fatalf("delivered %v before the first job", d)
	}
	close(first)
	l.Wait()
	if _, d := r.get("k"); !slices.Equal(d, []int{0, 1}) {
		t.Fatalf("delivered %v, want [0 1]", d)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) != 0 {
		t.Fatalf("lanes left running: %v", l.queue)
	}
}

// laneWait retries cond until it holds, for up to 10 s.
func laneWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s", what)
		}
	}
}
