package share

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// keysOf answers the keys of a log whose record at offset o has key
// log[o] ("" for a keyless record).
func keysOf(log []string) Keys {
	return func(o int64) (uint64, bool) {
		if o < 0 || o >= int64(len(log)) || log[o] == "" {
			return 0, false
		}
		return KeyHash([]byte(log[o])), true
	}
}

func offsets(rs []Range) []int64 {
	var out []int64
	for _, r := range rs {
		for o := r.First; o <= r.Last; o++ {
			out = append(out, o)
		}
	}
	return out
}

// With KeyOrdering a record is handed out only once every earlier record
// of its key is done: a released one comes again before the next of its
// key, keyless records and other keys go on meanwhile, and a window
// loaded from its encoding hands out nothing whose order it cannot tell
// until it learnt the keys.
func TestKeyOrdering(t *testing.T) {
	log := []string{"A", "A", "B", "", "A", "C"}
	keys := keysOf(log)
	p := New(0, Config{KeyOrdering: true, LockDurationMs: 1000})
	if got := offsets(p.Acquire("m1", 0, 10, 6, keys)); !slices.Equal(got, []int64{0, 2, 3, 5}) {
		t.Fatalf("first acquire %v, want 0 2 3 5: one record per key, keyless ones all", got)
	}
	if o, ok := p.Acquirable(0); !ok || o != 6 {
		t.Fatalf("Acquirable %d %v: want 6, the window's end (1 and 4 wait for 0)", o, ok)
	}
	if got := p.Acquire("m2", 0, 10, 6, keys); len(got) != 0 {
		t.Fatalf("second member got %v while A's first record is held", offsets(got))
	}
	if _, err := p.Acknowledge("m1", 1, []Ack{{First: 0, Last: 0, Types: []AckType{Release}}}); err != nil {
		t.Fatal(err)
	}
	if got := p.Acquire("m2", 1, 10, 6, keys); !slices.Equal(offsets(got), []int64{0}) || got[0].DeliveryCount != 2 {
		t.Fatalf("after 0's release: %+v, want 0 again (count 2), not 1", got)
	}
	if _, err := p.Acknowledge("m2", 2, []Ack{{First: 0, Last: 0, Types: []AckType{Accept}}}); err != nil {
		t.Fatal(err)
	}
	if got := offsets(p.Acquire("m2", 2, 10, 6, keys)); !slices.Equal(got, []int64{1}) {
		t.Fatalf("after 0 is accepted: %v, want 1 (4 waits for it)", got)
	}

	// A restart: the locks and the keys are gone.
	q, err := Decode(p.Encode(), p.Config())
	if err != nil {
		t.Fatal(err)
	}
	from, to, ok := q.UnknownKeys()
	if !ok || from != 1 || to != 6 {
		t.Fatalf("UnknownKeys %d %d %v, want [1, 6)", from, to, ok)
	}
	if got := q.Acquire("m3", 3, 10, 6, keys); len(got) != 0 {
		t.Fatalf("acquired %v with the window's keys unknown", offsets(got))
	}
	q.SetKeys(from, to, keys)
	if _, _, ok := q.UnknownKeys(); ok {
		t.Fatal("keys still unknown after SetKeys")
	}
	if got := offsets(q.Acquire("m3", 3, 10, 6, keys)); !slices.Equal(got, []int64{1, 2, 3, 5}) {
		t.Fatalf("after the restart %v, want 1 2 3 5 (4 waits for 1)", got)
	}

	// Without ordering the same log hands everything out at once.
	u := New(0, Config{})
	if got := offsets(u.Acquire("m1", 0, 10, 6, nil)); len(got) != 6 {
		t.Fatalf("without ordering: %v, want all 6", got)
	}
	if _, _, ok := u.UnknownKeys(); ok {
		t.Fatal("UnknownKeys with ordering off")
	}
}

// Random acquisitions, acknowledgements, expiries, member leaves and
// restarts with KeyOrdering: a record is never held while an earlier
// record of its key is in flight, and every record is done in the end.
func TestKeyOrderingRandomized(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		if err := runKeyOrdering(seed); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func runKeyOrdering(seed int64) error {
	rnd := rand.New(rand.NewSource(seed))
	names := []string{"", "A", "B", "C"}
	log := make([]string, 60)
	for i := range log {
		log[i] = names[rnd.Intn(len(names))]
	}
	keys := keysOf(log)
	cfg := Config{KeyOrdering: true, LockDurationMs: int64(1 + rnd.Intn(20)), DeliveryLimit: 100, MaxInFlight: int64(1 + rnd.Intn(20))}
	p := New(0, cfg)
	members := []string{"a", "b", "c"}
	var now int64
	for step := 0; step < 5000 && p.Start() < int64(len(log)); step++ {
		now += int64(rnd.Intn(4))
		member := members[rnd.Intn(len(members))]
		switch op := rnd.Intn(10); {
		case op < 4:
			if from, to, ok := p.UnknownKeys(); ok {
				p.SetKeys(from, to, keys)
			}
			p.Acquire(member, now, 1+rnd.Intn(5), int64(len(log)), keys)
		case op < 8:
			var acks []Ack
			for o := p.Start(); o < p.End(); o++ {
				if m, d := p.Owner(o); m == member && d > now && rnd.Intn(2) == 0 {
					acks = append(acks, Ack{First: o, Last: o, Types: []AckType{[]AckType{Accept, Accept, Release}[rnd.Intn(3)]}})
				}
			}
			if _, err := p.Acknowledge(member, now, acks); err != nil {
				return fmt.Errorf("step %d: %v", step, err)
			}
		case op == 8:
			p.ReleaseMember(member, now)
		default:
			q, err := Decode(p.Encode(), cfg)
			if err != nil {
				return err
			}
			p = q
		}
		held := map[string]int64{}
		for o := p.Start(); o < p.End(); o++ {
			st, _ := p.Record(o)
			if k := log[o]; k != "" && (st == Acquired || st == Available) {
				if first, ok := held[k]; ok && st == Acquired {
					return fmt.Errorf("step %d: offset %d of key %s acquired while offset %d of that key is in flight", step, o, k, first)
				}
				if _, ok := held[k]; !ok {
					held[k] = o
				}
			}
		}
	}
	if p.Start() < int64(len(log)) {
		return fmt.Errorf("stuck at %d of %d", p.Start(), len(log))
	}
	return nil
}
