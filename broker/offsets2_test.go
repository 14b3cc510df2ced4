package broker_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
)

// Committed offsets: no offsets, an unknown topic or an offset past the
// high watermark are refused; the high watermark itself is taken; a fetch
// filters by topic; offsets survive a restart.
func TestCommitAndFetchOffsets(t *testing.T) {
	dir := t.TempDir()
	b := openDir(t, dir)
	ctx := context.Background()
	createTopic(t, b, "t", 2)
	createTopic(t, b, "u", 1)
	produceTo(t, b, "t", 0, "a", "b")
	produceTo(t, b, "u", 0, "c")

	if err := b.CommitOffsets(ctx, "", "g", "", -1, nil); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("commit nothing: %v, want kind.ErrInvalidArgument", err)
	}
	if err := b.CommitOffsets(ctx, "", "g", "", -1, []offsets.Committed{{Topic: "nope", Offset: 0}}); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("commit to an unknown topic: %v, want ErrUnknownTopic", err)
	}
	bad := []offsets.Committed{{Topic: "u", Offset: 1}, {Topic: "t", Partition: 1, Offset: 1}}
	if err := b.CommitOffsets(ctx, "", "g", "", -1, bad); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("commit past an empty partition's high watermark: %v, want kind.ErrInvalidArgument", err)
	}
	if cs, err := b.FetchOffsets(ctx, "", "g", nil); err != nil || len(cs) != 0 {
		t.Fatalf("a refused commit stored %+v (%v): want it refused whole", cs, err)
	}
	good := []offsets.Committed{{Topic: "t", Partition: 0, Offset: 2}, {Topic: "u", Offset: 1}}
	if err := b.CommitOffsets(ctx, "", "g", "", -1, good); err != nil {
		t.Fatalf("commit at the high watermarks: %v", err)
	}
	if cs, err := b.FetchOffsets(ctx, "", "g", []string{"u"}); err != nil || len(cs) != 1 || cs[0].Topic != "u" || cs[0].Offset != 1 {
		t.Fatalf("offsets of u: %+v %v", cs, err)
	}
	if _, err := b.FetchOffsets(ctx, "", "g", []string{"nope"}); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("offsets of an unknown topic: %v, want ErrUnknownTopic", err)
	}
	if cs, err := b.FetchOffsets(ctx, "", "other", nil); err != nil || len(cs) != 0 {
		t.Fatalf("offsets of a group with none: %+v %v", cs, err)
	}
	if err := b.DeleteGroup(ctx, "", "other"); !errors.Is(err, groups.ErrGroupNotFound) {
		t.Fatalf("delete a group with no offsets: %v, want ErrGroupNotFound", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = openDir(t, dir)
	cs, err := b.FetchOffsets(ctx, "", "g", nil)
	if err != nil || len(cs) != 2 {
		t.Fatalf("offsets after a restart: %+v %v, want both", cs, err)
	}
	if gs, err := b.ListGroups(ctx, ""); err != nil || !slices.Equal(gs, []string{"g"}) {
		t.Fatalf("groups after a restart: %v %v", gs, err)
	}
}

// Lag is the distance to the high watermark, marked Trimmed when the
// committed offset is below the log start; an offset of a partition that
// does not exist has no bounds (Known false).
func TestLag(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 1)
	produceTo(t, b, "t", 0, "a", "b", "c")
	produceTo(t, b, "t", 0, "d")
	cs := []offsets.Committed{{Topic: "t", Offset: 1}, {Topic: "nope", Offset: 1}, {Topic: "t", Partition: 9}}
	lag := b.Lag(ctx, "g", cs)
	if len(lag) != 3 || !lag[0].Known || lag[0].Lag != 3 || lag[0].HighWatermark != 4 || lag[0].LogStart != 0 || lag[0].Trimmed {
		t.Fatalf("lag of t at 1: %+v, want 3 (hw 4, start 0)", lag)
	}
	if lag[1].Known || lag[2].Known || lag[1].Committed != cs[1] {
		t.Fatalf("lag of missing partitions: %+v, want unknown with the offset kept", lag[1:])
	}
	if _, err := b.DeleteRecords(ctx, "", "t", 0, 3); err != nil {
		t.Fatal(err)
	}
	lag = b.Lag(ctx, "g", cs[:1])
	if !lag[0].Known || lag[0].LogStart != 3 || !lag[0].Trimmed {
		t.Fatalf("lag below the log start: %+v, want Trimmed with start 3", lag[0])
	}
}

// ResolveReset resolves earliest, latest and an offset clamped to the
// log's bounds, for one partition or all, and refuses a partition out of
// range and an unknown topic.
func TestResolveReset(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 2)
	produceTo(t, b, "t", 0, "a", "b", "c")
	produceTo(t, b, "t", 1, "d")
	if _, err := b.DeleteRecords(ctx, "", "t", 0, 1); err != nil {
		t.Fatal(err)
	}
	p0, p9 := int32(0), int32(9)
	for _, c := range []struct {
		name string
		part *int32
		spec offsets.ResetSpec
		want []int64
	}{
		{"earliest", nil, offsets.ResetSpec{Kind: offsets.ResetEarliest}, []int64{1, 0}},
		{"latest", nil, offsets.ResetSpec{Kind: offsets.ResetLatest}, []int64{3, 1}},
		{"offset clamped", nil, offsets.ResetSpec{Kind: offsets.ResetOffset, Offset: 2}, []int64{2, 1}},
		{"offset below start", &p0, offsets.ResetSpec{Kind: offsets.ResetOffset, Offset: 0}, []int64{1}},
	} {
		cs, err := b.ResolveReset(ctx, "", "t", c.part, c.spec)
		if err != nil || len(cs) != len(c.want) {
			t.Fatalf("%s: %+v %v", c.name, cs, err)
		}
		for i, o := range cs {
			if o.Topic != "t" || o.Offset != c.want[i] {
				t.Fatalf("%s: %+v, want offsets %v", c.name, cs, c.want)
			}
		}
	}
	if _, err := b.ResolveReset(ctx, "", "t", &p9, offsets.ResetSpec{Kind: offsets.ResetEarliest}); err == nil {
		t.Fatal("reset of partition 9 of 2: no error")
	}
	if _, err := b.ResolveReset(ctx, "", "nope", nil, offsets.ResetSpec{Kind: offsets.ResetEarliest}); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("reset of an unknown topic: %v, want ErrUnknownTopic", err)
	}
}

// DeleteRecords moves the log start forward only: -1 is the high
// watermark, an offset at or below the start changes nothing, one past
// the high watermark or below -1 is refused; what is below the start is
// never read again, and ListOffsets' earliest is the new start.
func TestDeleteRecords(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 1)
	produceTo(t, b, "t", 0, "a", "b")
	produceTo(t, b, "t", 0, "c", "d")
	if _, err := b.DeleteRecords(ctx, "", "t", 0, -2); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("offset -2: %v, want kind.ErrInvalidArgument", err)
	}
	var oor *log.OutOfRangeError
	if _, err := b.DeleteRecords(ctx, "", "t", 0, 5); !errors.As(err, &oor) {
		t.Fatalf("past the high watermark: %v, want *OutOfRangeError", err)
	}
	if _, err := b.DeleteRecords(ctx, "", "t", 3, 0); err == nil {
		t.Fatal("partition 3 of 1: no error")
	}
	if _, err := b.DeleteRecords(ctx, "", "nope", 0, 0); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v, want ErrUnknownTopic", err)
	}
	if start, err := b.DeleteRecords(ctx, "", "t", 0, 3); err != nil || start != 3 {
		t.Fatalf("delete below 3: start %d %v, want 3", start, err)
	}
	if start, err := b.DeleteRecords(ctx, "", "t", 0, 1); err != nil || start != 3 {
		t.Fatalf("delete below 1 after 3: start %d %v, want 3 (the start never moves back)", start, err)
	}
	got := fetch(t, b, broker.FetchRequest{Partitions: []broker.FetchPartition{{Topic: "t", Offset: 2}, {Topic: "t", Offset: 3}}})
	if !errors.As(got[0].Err, &oor) || oor.StartOffset != 3 {
		t.Fatalf("read below the start: %+v, want *OutOfRangeError with start 3", got[0])
	}
	// The start falls inside the second batch: the batch is read whole,
	// and the reader skips the records below its offset.
	if got[1].Err != nil || got[1].LogStart != 3 || got[1].NextOffset != 4 {
		t.Fatalf("read at the start: %+v", got[1])
	}
	if pos, err := b.ListOffsets(ctx, "", "t", nil, broker.Earliest); err != nil || pos[0].Offset != 3 {
		t.Fatalf("earliest: %+v %v, want 3", pos, err)
	}
	if start, err := b.DeleteRecords(ctx, "", "t", 0, -1); err != nil || start != 4 {
		t.Fatalf("delete to the high watermark: %d %v, want 4", start, err)
	}
}

// EpochEnd refuses an unknown topic and a partition out of range; on a
// single node every batch is of epoch 0, whose end is the high watermark.
func TestEpochEnd(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 1)
	produceTo(t, b, "t", 0, "a", "b")
	if found, end, err := b.EpochEnd(ctx, "", "t", 0, 0); err != nil || found != 0 || end != 2 {
		t.Fatalf("epoch 0: found %d end %d %v, want 0 and 2", found, end, err)
	}
	if _, _, err := b.EpochEnd(ctx, "", "t", 1, 0); err == nil {
		t.Fatal("partition 1 of 1: no error")
	}
	if _, _, err := b.EpochEnd(ctx, "", "nope", 0, 0); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v, want ErrUnknownTopic", err)
	}
}
