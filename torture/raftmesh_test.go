package torture

import (
	"bufio"
	"net"
	"slices"
	"testing"
	"time"
)

func TestSplits(t *testing.T) {
	cases := []struct {
		s    Split
		cuts [][2]int
	}{
		{Isolate(3, 1), [][2]int{{0, 1}, {1, 2}}},
		{Halves(3, 2, []int{1, 2, 0}), [][2]int{{0, 2}, {1, 2}}},
		{Halves(5, 2, []int{2, 4, 0, 1, 3}), [][2]int{{0, 2}, {1, 2}, {2, 3}, {0, 4}, {1, 4}, {3, 4}}},
		{Bridge(3, 0, []int{2, 0, 1}), [][2]int{{1, 2}}},
		{Bridge(5, 4, []int{3, 1, 4, 0, 2}), [][2]int{{0, 3}, {2, 3}, {0, 1}, {1, 2}}},
	}
	for _, c := range cases {
		got := slices.Clone(c.s.Cuts)
		want := slices.Clone(c.cuts)
		less := func(a, b [2]int) int {
			if a[0] != b[0] {
				return a[0] - b[0]
			}
			return a[1] - b[1]
		}
		slices.SortFunc(got, less)
		slices.SortFunc(want, less)
		if !slices.Equal(got, want) {
			t.Errorf("%s (%s): cuts %v, want %v", c.s.Name, c.s.Desc, got, want)
		}
	}
}

// echoServer answers each line it reads with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := c.Write(append(sc.Bytes(), '\n')); err != nil {
						return
					}
				}
			}()
		}
	}()
	return lis.Addr().String()
}

// roundTrip sends a line from a to b through the mesh and reports whether
// the echo came back within d.
func roundTrip(m *RaftMesh, a, b int, d time.Duration) bool {
	c, err := net.DialTimeout("tcp", m.Link(a, b).Addr(), d)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "ping\n"
}

func TestRaftMesh(t *testing.T) {
	addrs := []string{echoServer(t), echoServer(t), echoServer(t)}
	m, err := NewRaftMesh(addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got, want := m.Dial(0, addrs[2]), m.Link(0, 2).Addr(); got != want {
		t.Fatalf("node 0 dials node 2's raft address at %s, want its link %s", got, want)
	}
	if routes := m.Routes(1); routes != addrs[0]+"="+m.Link(1, 0).Addr()+","+addrs[2]+"="+m.Link(1, 2).Addr() {
		t.Fatalf("routes of node 1: %s", routes)
	}
	const d = 300 * time.Millisecond
	all := func(want map[[2]int]bool) {
		t.Helper()
		for a := range 3 {
			for b := range 3 {
				if a != b && roundTrip(m, a, b, d) != want[pair(a, b)] {
					t.Errorf("link %d->%d up: %v, want %v", a, b, !want[pair(a, b)], want[pair(a, b)])
				}
			}
		}
	}
	up := map[[2]int]bool{{0, 1}: true, {0, 2}: true, {1, 2}: true}
	all(up)
	for _, blackhole := range []bool{false, true} {
		m.Partition(Isolate(3, 0), blackhole)
		all(map[[2]int]bool{{1, 2}: true})
		m.HealPartition()
		all(up)
	}
	m.Partition(Bridge(3, 0, []int{1, 2}), false)
	all(map[[2]int]bool{{0, 1}: true, {0, 2}: true})
	m.Freeze(1)
	all(map[[2]int]bool{{0, 2}: true})
	m.HealPartition()
	all(map[[2]int]bool{{0, 2}: true}) // node 1 still frozen
	m.Thaw(1)
	all(up)
}
