package torture

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
)

// opHistory records a side workload's operations (compacted, key-value
// view) from many goroutines, on the clock of the main History; each
// operation gets its index as its ID.
type opHistory[T any] struct {
	now func() int64
	id  func(*T) *int
	mu  sync.Mutex
	ops []T
}

// Now is the time on the main history's clock.
func (h *opHistory[T]) Now() int64 { return h.now() }

// Add records a completed operation.
func (h *opHistory[T]) Add(op T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.id(&op) = len(h.ops)
	h.ops = append(h.ops, op)
}

// Ops returns a copy of the operations, in the order they were added.
func (h *opHistory[T]) Ops() []T {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// WriteFile writes the operations as gzipped JSON ({"ops": [...]}) to
// path.
func (h *opHistory[T]) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	z := gzip.NewWriter(f)
	err = json.NewEncoder(z).Encode(struct {
		Ops []T `json:"ops"`
	}{h.Ops()})
	if cerr := z.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("torture: %s: %w", path, err)
	}
	return nil
}
