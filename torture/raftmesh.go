package torture

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// RaftMesh puts a TCP proxy on every ordered pair of nodes between their
// Raft ports: node a reaches node b's Raft address through Link(a, b), so
// a partition between a and b cuts (or blackholes) both directions of the
// link while every other link carries on. Real processes learn their
// routes from the LOGD_RAFT_ROUTES environment variable (Routes).
//
// A Raft connection carries a request and its answer, and either side
// may dial, so only both directions together partition a link: Partition
// acts on both.
type RaftMesh struct {
	addrs []string   // each node's own Raft address
	links [][]*Proxy // links[a][b]: a's way to b; nil when a == b

	mu        sync.Mutex
	split     map[[2]int]bool // pairs partitioned
	blackhole bool            // the partition holds bytes rather than resets
	frozen    map[int]bool
	down      map[int]bool
}

// NewRaftMesh starts a proxy for every ordered pair of nodes whose Raft
// addresses are raftAddrs.
func NewRaftMesh(raftAddrs []string) (*RaftMesh, error) {
	m := &RaftMesh{addrs: raftAddrs, links: make([][]*Proxy, len(raftAddrs))}
	for a := range raftAddrs {
		m.links[a] = make([]*Proxy, len(raftAddrs))
		for b, to := range raftAddrs {
			if a == b {
				continue
			}
			p, err := NewProxy(to)
			if err != nil {
				m.Close()
				return nil, err
			}
			m.links[a][b] = p
		}
	}
	return m, nil
}

// Size is the number of nodes.
func (m *RaftMesh) Size() int { return len(m.addrs) }

// Link is the proxy node a dials to reach node b.
func (m *RaftMesh) Link(a, b int) *Proxy { return m.links[a][b] }

// Routes is node's LOGD_RAFT_ROUTES: every other node's Raft address
// mapped to the proxy of the link from node to it.
func (m *RaftMesh) Routes(node int) string {
	var routes []string
	for b, to := range m.addrs {
		if b != node {
			routes = append(routes, to+"="+m.links[node][b].Addr())
		}
	}
	return strings.Join(routes, ",")
}

// Dial maps the address node wants to dial to the proxy of its link, for
// an in-process node's dialer; an address of no node is dialled as is.
func (m *RaftMesh) Dial(node int, addr string) string {
	for b, to := range m.addrs {
		if to == addr && b != node {
			return m.links[node][b].Addr()
		}
	}
	return addr
}

// Partition applies split: the links of its Cuts are reset (new
// connections refused) or, with blackhole, hold every byte both ways (and
// deliver them when healed, as TCP does after a short partition). It
// replaces the previous partition, not the frozen nodes.
func (m *RaftMesh) Partition(s Split, blackhole bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.split, m.blackhole = map[[2]int]bool{}, blackhole
	for _, c := range s.Cuts {
		m.split[pair(c[0], c[1])] = true
	}
	m.apply()
}

// HealPartition removes the partition.
func (m *RaftMesh) HealPartition() { m.Partition(Split{}, false) }

// Freeze holds every byte to and from node (its links stay open, nothing
// answers: what its peers see of a SIGSTOPped node); Thaw delivers them.
func (m *RaftMesh) Freeze(node int) { m.setFrozen(node, true) }

// Thaw ends Freeze.
func (m *RaftMesh) Thaw(node int) { m.set(&m.frozen, node, false) }

// SetDown resets every link of node and refuses new ones (true), as the
// kernel does for a killed process, or ends that (false). In-process
// clusters need it: a stopping server's connections do not die at once.
func (m *RaftMesh) SetDown(node int, down bool) { m.set(&m.down, node, down) }

func (m *RaftMesh) setFrozen(node int, on bool) { m.set(&m.frozen, node, on) }

func (m *RaftMesh) set(nodes *map[int]bool, node int, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if *nodes == nil {
		*nodes = map[int]bool{}
	}
	(*nodes)[node] = on
	m.apply()
}

// Heal removes the partition, thaws every node and ends SetDown.
func (m *RaftMesh) Heal() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.split, m.frozen, m.down = nil, nil, nil
	m.apply()
}

// apply sets every proxy from the partition and the frozen nodes.
func (m *RaftMesh) apply() {
	for a := range m.links {
		for b, p := range m.links[a] {
			if p == nil {
				continue
			}
			parted := m.split[pair(a, b)]
			p.SetCut((parted && !m.blackhole) || m.down[a] || m.down[b])
			p.SetBlackhole(m.frozen[a] || m.frozen[b] || (parted && m.blackhole))
		}
	}
}

// Close stops every proxy.
func (m *RaftMesh) Close() error {
	var errs []error
	for a := range m.links {
		for _, p := range m.links[a] {
			if p != nil {
				errs = append(errs, p.Close())
			}
		}
	}
	return errors.Join(errs...)
}

// A Split is a set of network partitions between nodes: Cuts lists the
// pairs that cannot talk; every other pair can.
type Split struct {
	Name string   // "isolate", "halves", "bridge"
	Cuts [][2]int // pairs (a < b) whose link is cut
	Desc string   // the components, for the report: "{0} | {1 2}"
}

// Isolate cuts node off from every other node of n.
func Isolate(n, node int) Split {
	var rest []int
	var cuts [][2]int
	for b := range n {
		if b != node {
			rest = append(rest, b)
			cuts = append(cuts, pair(node, b))
		}
	}
	return Split{Name: "isolate", Cuts: cuts, Desc: fmt.Sprintf("%v | %v", []int{node}, rest)}
}

// Halves splits n nodes into a minority that holds node and a majority:
// the minority is node and (n-1)/2-1 others chosen by pick (a shuffle of
// the other nodes), so with 3 nodes it is node alone and with 5 node and
// one other.
func Halves(n, node int, others []int) Split {
	minority := []int{node}
	for _, o := range others {
		if len(minority) >= max(1, (n-1)/2) {
			break
		}
		if o != node {
			minority = append(minority, o)
		}
	}
	in := map[int]bool{}
	for _, m := range minority {
		in[m] = true
	}
	var majority []int
	for b := range n {
		if !in[b] {
			majority = append(majority, b)
		}
	}
	var cuts [][2]int
	for _, a := range minority {
		for _, b := range majority {
			cuts = append(cuts, pair(a, b))
		}
	}
	sort.Ints(minority)
	return Split{Name: "halves", Cuts: cuts, Desc: fmt.Sprintf("%v | %v", minority, majority)}
}

// Bridge keeps node connected to every other node and splits the others
// into two halves that cannot reach each other (Jepsen's bridge): each
// half plus node is a majority, so both sides can elect. others is a
// shuffle of the nodes; node is skipped in it.
func Bridge(n, node int, others []int) Split {
	var rest []int
	for _, o := range others {
		if o != node {
			rest = append(rest, o)
		}
	}
	left, right := rest[:len(rest)/2], rest[len(rest)/2:]
	var cuts [][2]int
	for _, a := range left {
		for _, b := range right {
			cuts = append(cuts, pair(a, b))
		}
	}
	l, r := append([]int(nil), left...), append([]int(nil), right...)
	sort.Ints(l)
	sort.Ints(r)
	return Split{Name: "bridge", Cuts: cuts, Desc: fmt.Sprintf("%v | %v, bridged by %d", l, r, node)}
}

func pair(a, b int) [2]int {
	if a > b {
		a, b = b, a
	}
	return [2]int{a, b}
}
