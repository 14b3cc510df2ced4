package replication

import "testing"

func TestGroupNames(t *testing.T) {
	cases := []struct {
		topic     string
		partition int
		group     string
		dir       string
	}{
		{"orders", 0, "p/orders/0", "p~orders~0"},
		{"a.b-c_d", 12, "p/a.b-c_d/12", "p~a.b-c_d~12"},
		{"..", 1, "p/../1", "p~..~1"}, // stays one directory level
	}
	for _, c := range cases {
		if g := PartitionGroup(c.topic, c.partition); g != c.group {
			t.Errorf("PartitionGroup(%q, %d) = %q, want %q", c.topic, c.partition, g, c.group)
		}
		if d := groupDir(c.group); d != c.dir {
			t.Errorf("groupDir(%q) = %q, want %q", c.group, d, c.dir)
		}
	}
	if groupDir(MetaGroup) != "meta" {
		t.Errorf("groupDir(meta) = %q", groupDir(MetaGroup))
	}
}
