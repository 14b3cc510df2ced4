package partition

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

const topicPrefix = "topic/"

// registry persists topic configs in the node's Pebble DB.
type registry struct{ db *pebble.DB }

func topicKey(name string) []byte { return []byte(topicPrefix + name) }

func (r registry) put(c TopicConfig) error {
	v, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := r.db.Set(topicKey(c.Name), v, pebble.Sync); err != nil {
		return fmt.Errorf("store topic %q: %w", c.Name, err)
	}
	return nil
}

func (r registry) delete(name string) error {
	if err := r.db.Delete(topicKey(name), pebble.Sync); err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	return nil
}

func (r registry) list() ([]TopicConfig, error) {
	it, err := r.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte(topicPrefix),
		UpperBound: []byte(topicPrefix[:len(topicPrefix)-1] + string(rune(topicPrefix[len(topicPrefix)-1]+1))),
	})
	if err != nil {
		return nil, err
	}
	var out []TopicConfig
	for it.First(); it.Valid(); it.Next() {
		var c TopicConfig
		if err := json.Unmarshal(it.Value(), &c); err != nil {
			it.Close()
			return nil, fmt.Errorf("topic config %q is unreadable: %w", it.Key(), err)
		}
		out = append(out, c)
	}
	return out, errors.Join(it.Error(), it.Close())
}
