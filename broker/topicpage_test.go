package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
)

// TopicPage answers topics in name order, a page at a time, each page's
// next leading to the following one; a page after a topic deleted since
// starts where it would have been.
func TestTopicPage(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	for i := range 25 {
		createTopic(t, b, fmt.Sprintf("t%02d", i), 1)
	}
	var names []string
	after, pages := "", 0
	for {
		page, next, err := b.TopicPage(ctx, "", after, 10)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, c := range page {
			names = append(names, c.Name)
		}
		if next == "" {
			break
		}
		if next != page[len(page)-1].Name {
			t.Fatalf("page %d: next %q, want its last topic %q", pages, next, page[len(page)-1].Name)
		}
		after = next
	}
	if pages != 3 || len(names) != 25 || names[0] != "t00" || names[24] != "t24" {
		t.Fatalf("%d pages, topics %v", pages, names)
	}
	if page, next, err := b.TopicPage(ctx, "", "", 0); err != nil || len(page) != 25 || next != "" {
		t.Fatalf("size 0 (the default): %d topics, next %q, %v; want all 25 on one page", len(page), next, err)
	}
	if err := b.DeleteTopic(ctx, "", "t10"); err != nil {
		t.Fatal(err)
	}
	if page, _, err := b.TopicPage(ctx, "", "t10", 2); err != nil || len(page) != 2 || page[0].Name != "t11" {
		t.Fatalf("after a deleted topic: %v, %v; want t11 first", page, err)
	}
	for _, c := range []struct {
		after string
		size  int
	}{{"", -1}, {"not/a topic", 10}} {
		if _, _, err := b.TopicPage(ctx, "", c.after, c.size); !errors.Is(err, kind.ErrInvalidArgument) {
			t.Fatalf("after %q, size %d: %v, want an invalid argument", c.after, c.size, err)
		}
	}
	if _, _, err := b.TopicPage(ctx, "", "", broker.MaxTopicPage+1); err != nil {
		t.Fatalf("a size over the most: %v, want the most", err)
	}
}
