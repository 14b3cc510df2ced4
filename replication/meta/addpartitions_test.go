package meta

import (
	"errors"
	"slices"
	"testing"

	"github.com/logd/logd/partition"
)

func TestAddPartitionsAppendsPlacement(t *testing.T) {
	f, err := NewFSM()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg := partition.DefaultConfig("orders")
	cfg.Partitions, cfg.Replicas, cfg.CreatedMs = 2, 2, 1000
	sets := [][]string{{"a", "b"}, {"b", "a"}}
	if err := apply(t, f, 1, Command{Op: OpCreateTopic, Topic: &Topic{Config: cfg, Replicas: sets, Initial: sets}}); err != nil {
		t.Fatal(err)
	}
	grown := cfg
	grown.Partitions = 4
	added := [][]string{{"a", "c"}, {"c", "b"}}
	bad := []Command{
		{Op: OpAddPartitions, Name: "orders", Topic: &Topic{Config: grown, Replicas: added[:1], Initial: added[:1]}},           // placement too short
		{Op: OpAddPartitions, Name: "orders", Topic: &Topic{Config: cfg, Replicas: nil, Initial: nil}},                         // no growth
		{Op: OpAddPartitions, Name: "gone", Topic: &Topic{Config: grown, Replicas: added, Initial: added}},                     // unknown topic
		{Op: OpAddPartitions, Name: "orders", Topic: &Topic{Config: withCreated(grown, 999), Replicas: added, Initial: added}}, // older incarnation
		{Op: OpAddPartitions, Name: "orders"},
	}
	for i, c := range bad {
		if err := apply(t, f, uint64(2+i), c); err == nil {
			t.Errorf("bad add %d applied", i)
		}
	}
	if err := apply(t, f, 10, Command{Op: OpAddPartitions, Name: "gone", Topic: &Topic{Config: grown}}); !errors.Is(err, partition.ErrTopicNotFound) {
		t.Errorf("unknown topic: %v, want ErrTopicNotFound", err)
	}
	if err := apply(t, f, 11, Command{Op: OpAddPartitions, Name: "orders", Topic: &Topic{Config: grown, Replicas: added, Initial: added}}); err != nil {
		t.Fatal(err)
	}
	got := f.State().Topics["orders"]
	want := [][]string{{"a", "b"}, {"b", "a"}, {"a", "c"}, {"c", "b"}}
	if got.Config.Partitions != 4 || !slices.EqualFunc(got.Replicas, want, slices.Equal) || !slices.EqualFunc(got.Initial, want, slices.Equal) {
		t.Fatalf("after add: %d partitions, replicas %v, initial %v; want 4, %v", got.Config.Partitions, got.Replicas, got.Initial, want)
	}
	if got.Config.RetentionMs != cfg.RetentionMs || got.Config.CreatedMs != 1000 {
		t.Fatalf("add changed other settings: %+v", got.Config)
	}
}

func withCreated(c partition.TopicConfig, ms int64) partition.TopicConfig {
	c.CreatedMs = ms
	return c
}
