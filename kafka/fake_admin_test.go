package kafka

import (
	"context"
	"fmt"

	"github.com/logd/logd/partition"
)

func (f *fakeCore) TopicConfigs(context.Context, Principal) ([]partition.TopicConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []partition.TopicConfig
	for _, n := range f.order {
		out = append(out, f.topics[n].cfg)
	}
	return out, nil
}

func (f *fakeCore) AlterTopic(_ context.Context, _ Principal, name string, ch partition.ConfigChange) (partition.TopicConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[name]
	if !ok {
		return partition.TopicConfig{}, fmt.Errorf("%w %q", ErrUnknownTopic, name)
	}
	cfg := t.cfg.Apply(ch)
	if err := cfg.Validate(); err != nil {
		return t.cfg, err
	}
	t.cfg = cfg
	return cfg, nil
}
