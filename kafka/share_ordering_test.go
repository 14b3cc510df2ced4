package kafka

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/broker"
)

// share.key.ordering set through IncrementalAlterConfigs: two franz-go
// share consumers, releasing a quarter of what they get, are each handed
// a record only once every earlier record of its key was accepted, and
// every record is accepted in the end. A record is released at most
// twice, so none reaches the delivery limit (5) and is archived, which
// would rightly let the later records of its key go out unaccepted.
func TestShareKeyOrderingKafka(t *testing.T) {
	n := startShareNode(t, t.TempDir(), broker.Config{})
	ctx := testCtx(t)
	if _, err := n.b.CreateTopic(ctx, "", topicConfig("q", 1)); err != nil {
		t.Fatal(err)
	}
	admin := newClient(t, n.addr)
	if code := alterGroup(t, admin, "g", false, sp("share.auto.offset.reset"), sp("earliest"), sp("share.key.ordering"), sp("true")); code != 0 {
		t.Fatalf("set: %v", kerr.ErrorForCode(code))
	}
	if code := alterGroup(t, admin, "g", false, sp("share.key.ordering"), sp("sometimes")); code != kerr.InvalidConfig.Code {
		t.Fatalf("share.key.ordering=sometimes: %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}
	const count = 60
	p := newClient(t, n.addr, kgo.DefaultProduceTopic("q"))
	var rs []*kgo.Record
	for i := range count {
		rs = append(rs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%3), Value: fmt.Append(nil, i)})
	}
	if err := p.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	accepted := map[int64]bool{}
	released := map[int64]int{}
	keyOf := func(o int64) string { return fmt.Sprintf("k%d", o%3) }
	var wg sync.WaitGroup
	for m := range 2 {
		cl := shareClient(t, n.addr, "q", "g", kgo.ShareMaxRecords(5))
		rnd := rand.New(rand.NewSource(int64(m)))
		wg.Go(func() {
			for ctx.Err() == nil {
				mu.Lock()
				done := len(accepted) == count
				mu.Unlock()
				if done {
					return
				}
				for _, r := range pollShare(t, cl) {
					mu.Lock()
					for o := r.Offset - 3; o >= 0; o -= 3 {
						if !accepted[o] {
							t.Errorf("member %d got offset %d (key %s) before offset %d of that key was accepted", m, r.Offset, keyOf(r.Offset), o)
						}
					}
					if released[r.Offset] < 2 && rnd.Intn(4) == 0 {
						released[r.Offset]++
						r.Ack(kgo.AckRelease)
					} else {
						r.Ack(kgo.AckAccept)
						accepted[r.Offset] = true
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(accepted) != count {
		t.Fatalf("%d of %d records accepted", len(accepted), count)
	}
}
