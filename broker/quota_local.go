package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/replication/meta"
)

// localQuotas are the client quotas of a node that runs alone: keys
// "quota/<entity key>" of its Pebble store, the values' JSON, written with
// sync and mirrored in memory (read from the store at first use).
type localQuotas struct {
	mu     sync.Mutex
	loaded bool
	qs     map[string]map[string]float64
}

const quotaKeyPrefix = "quota/"

// loadLocked reads the quotas from db once.
func (q *localQuotas) loadLocked(db *pebble.DB) error {
	if q.loaded {
		return nil
	}
	q.qs = map[string]map[string]float64{}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte(quotaKeyPrefix), UpperBound: prefixEnd(quotaKeyPrefix)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		var vs map[string]float64
		if err := json.Unmarshal(it.Value(), &vs); err != nil {
			it.Close()
			return fmt.Errorf("quota %q: %w", bytes.TrimPrefix(it.Key(), []byte(quotaKeyPrefix)), err)
		}
		q.qs[string(it.Key()[len(quotaKeyPrefix):])] = vs
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	q.loaded = true
	return nil
}

// quotas answers none when the store does not read (logged by the
// writes, which fail the same way).
func (l *localPlane) quotas() (uint64, map[string]map[string]float64) {
	l.q.mu.Lock()
	defer l.q.mu.Unlock()
	if l.q.loadLocked(l.db) != nil {
		return l.gen.Load(), nil
	}
	out := make(map[string]map[string]float64, len(l.q.qs))
	for k, vs := range l.q.qs {
		out[k] = vs // never changed in place: alterQuota replaces it
	}
	return l.gen.Load(), out
}

func (l *localPlane) alterQuota(_ context.Context, key string, alt meta.QuotaAlteration) error {
	l.q.mu.Lock()
	defer l.q.mu.Unlock()
	if err := l.q.loadLocked(l.db); err != nil {
		return fmt.Errorf("read the quotas: %w", err)
	}
	qs := meta.AlterQuotas(map[string]map[string]float64{key: l.q.qs[key]}, key, alt)
	vs, ok := qs[key]
	var err error
	if ok {
		var enc []byte
		if enc, err = json.Marshal(vs); err == nil {
			err = l.db.Set([]byte(quotaKeyPrefix+key), enc, pebble.Sync)
		}
	} else {
		err = l.db.Delete([]byte(quotaKeyPrefix+key), pebble.Sync)
	}
	if err != nil {
		return err
	}
	if ok {
		l.q.qs[key] = vs
	} else {
		delete(l.q.qs, key)
	}
	l.gen.Add(1)
	return nil
}
