package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
)

func (f *fakeCore) TopicConfigs(context.Context, Principal) ([]broker.TopicConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []broker.TopicConfig
	for _, n := range f.order {
		out = append(out, f.topics[n].cfg)
	}
	return out, nil
}

func (f *fakeCore) AlterTopic(_ context.Context, _ Principal, name string, ch broker.ConfigChange) (broker.TopicConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[name]
	if !ok {
		return broker.TopicConfig{}, fmt.Errorf("%w %q", ErrUnknownTopic, name)
	}
	cfg := t.cfg.Apply(ch)
	if err := cfg.Validate(); err != nil {
		return t.cfg, err
	}
	t.cfg = cfg
	return cfg, nil
}

func (f *fakeCore) ListGroups(context.Context, Principal) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for g := range f.commits {
		out = append(out, g)
	}
	sort.Strings(out)
	return out, nil
}

func (f *fakeCore) DeleteGroup(_ context.Context, _ Principal, group string) error {
	err := f.coord.DeleteGroup(group)
	if err != nil && !errors.Is(err, groups.ErrGroupNotFound) {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.commits[group]; !ok && err != nil {
		return err
	}
	delete(f.commits, group)
	return nil
}

func (f *fakeCore) Allowed(Principal, auth.Operation, auth.Resource) bool { return true }

func (f *fakeCore) AddPartitions(_ context.Context, _ Principal, topic string, count int32) (broker.TopicConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[topic]
	if !ok {
		return broker.TopicConfig{}, fmt.Errorf("%w %q", ErrUnknownTopic, topic)
	}
	if count <= t.cfg.Partitions {
		return t.cfg, fmt.Errorf("%w: not more partitions", kind.ErrInvalidArgument)
	}
	t.parts = append(t.parts, make([][]fakeBatch, count-t.cfg.Partitions)...)
	t.cfg.Partitions = count
	return t.cfg, nil
}

// The ACL methods keep the ACLs in memory; the broker's checks of the
// caller are aclCore's (authz_test.go).
func (f *fakeCore) AddACLs(_ context.Context, _ Principal, acls ...auth.ACL) error {
	if err := f.acls.Add(acls...); err != nil {
		return fmt.Errorf("%w: %v", kind.ErrInvalidArgument, err)
	}
	return nil
}

func (f *fakeCore) RemoveACLs(_ context.Context, _ Principal, filter auth.ACLFilter) ([]auth.ACL, error) {
	return f.acls.Remove(filter)
}

func (f *fakeCore) ListACLs(_ context.Context, _ Principal, filter auth.ACLFilter) ([]auth.ACL, error) {
	return f.acls.List(filter)
}
