package batch

import (
	"sync"
	"testing"
)

// crcCounter counts the CRC computations of batches (SetChecksumHook), by
// the address of the batch's first byte: the same batch in the same buffer
// checked twice counts 2 there.
type crcCounter struct {
	mu sync.Mutex
	n  map[*byte]int
}

func countCRCs(t *testing.T) *crcCounter {
	c := &crcCounter{n: map[*byte]int{}}
	SetChecksumHook(func(b []byte) {
		c.mu.Lock()
		c.n[&b[0]]++
		c.mu.Unlock()
	})
	t.Cleanup(func() { SetChecksumHook(nil) })
	return c
}

func (c *crcCounter) of(b []byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[&b[0]]
}

// Validate and CheckFrame compute a batch's CRC once; the Checked they
// return carries the batch and its header, and a failed check none.
func TestCheckedCarriesOneCRC(t *testing.T) {
	b := Encode(nil, 0, NoProducer, sample())
	c := countCRCs(t)
	v, err := Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.of(b); n != 1 {
		t.Fatalf("Validate computed the CRC %d times, want 1", n)
	}
	if !v.Validated() || &v.Bytes()[0] != &b[0] || len(v.Bytes()) != len(b) || v.Info().NumRecords != int32(len(sample())) {
		t.Fatalf("Validate: %+v", v.Info())
	}
	f, err := CheckFrame(b)
	if err != nil || f.Validated() || f.Info() != v.Info() {
		t.Fatalf("CheckFrame: %+v validated %v, %v", f.Info(), f.Validated(), err)
	}
	if n := c.of(b); n != 2 {
		t.Fatalf("CheckFrame computed the CRC %d times, want 1", n-1)
	}
	b[len(b)-1] ^= 1
	if bad, err := Validate(b); err == nil || len(bad.Bytes()) != 0 {
		t.Fatalf("a corrupt batch: %v, %d bytes checked", err, len(bad.Bytes()))
	}
}
