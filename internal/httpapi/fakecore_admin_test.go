package httpapi

import (
	"context"
	"fmt"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
)

// The fake core creates a topic of the partitions asked (its settings are
// not kept) and changes none: the topic routes are tested over a real
// broker (topics_admin_test.go).
func (f *fakeCore) CreateTopic(_ context.Context, _ broker.Principal, cfg broker.TopicConfig) (broker.TopicConfig, error) {
	f.mu.Lock()
	_, exists := f.topics[cfg.Name]
	f.mu.Unlock()
	if exists {
		return cfg, fmt.Errorf("%w: %q", broker.ErrTopicExists, cfg.Name)
	}
	f.addTopic(cfg.Name, int(cfg.Partitions))
	return cfg, nil
}

func (f *fakeCore) AlterTopic(context.Context, broker.Principal, string, broker.ConfigChange) (broker.TopicConfig, error) {
	return broker.TopicConfig{}, kind.Errorf(kind.ErrFailedPrecondition, "the fake core keeps no topic settings")
}
