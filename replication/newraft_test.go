package replication

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// brokenLog is a log whose entries before the last cannot be read (a
// disk answering EIO when a closed segment is opened again).
type brokenLog struct{ *raft.InmemStore }

var errEIO = errors.New("input/output error")

func (b brokenLog) GetLog(index uint64, l *raft.Log) error {
	if last, _ := b.LastIndex(); index < last {
		return errEIO
	}
	return b.InmemStore.GetLog(index, l)
}

type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshot") }
func (nopFSM) Restore(io.ReadCloser) error         { return nil }

// A replica whose log cannot be read fails to open with an error; Raft
// itself panics (hashicorp/raft v1.8.0 scans the log for configuration
// entries and panics on a read error), which stopped a whole node.
func TestNewRaftUnreadableLogIsAnError(t *testing.T) {
	open := func() (*raft.Raft, error) {
		store := raft.NewInmemStore()
		if err := store.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("x")},
			{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("y")}}); err != nil {
			t.Fatal(err)
		}
		stable := raft.NewInmemStore()
		if err := stable.SetUint64([]byte("CurrentTerm"), 1); err != nil {
			t.Fatal(err)
		}
		conf := raft.DefaultConfig()
		conf.LocalID = "n1"
		conf.Logger = hclog.NewNullLogger()
		_, trans := raft.NewInmemTransport("n1")
		return newRaftOrRaw(conf, brokenLog{store}, stable, trans)
	}
	raw = true
	func() {
		defer func() {
			if v := recover(); v == nil {
				t.Error("raft.NewRaft on an unreadable log did not panic: newRaft's recover may be unneeded")
			}
		}()
		open()
	}()
	raw = false
	before := runtime.NumGoroutine()
	r, err := open()
	if err == nil || r != nil || !errors.Is(err, errEIO) || !strings.Contains(err.Error(), "read the log") {
		t.Fatalf("newRaft on an unreadable log: %v, %v; want an error wrapping EIO", r, err)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after a failed newRaft, %d before", n, before)
	}
}

// raw makes newRaftOrRaw call raft.NewRaft itself.
var raw bool

func newRaftOrRaw(conf *raft.Config, logs raft.LogStore, stable raft.StableStore, trans raft.Transport) (*raft.Raft, error) {
	snaps := raft.NewInmemSnapshotStore()
	if raw {
		return raft.NewRaft(conf, nopFSM{}, logs, stable, snaps, trans)
	}
	return newRaft(conf, nopFSM{}, logs, stable, snaps, trans)
}

// Any other panic goes on: a runtime error is a bug, not a disk.
func TestNewRaftPanicsOnABug(t *testing.T) {
	defer func() {
		v := recover()
		if _, ok := v.(runtime.Error); !ok {
			t.Fatalf("recovered %v, want the runtime error itself", v)
		}
	}()
	newRaft(nil, nil, nil, nil, nil, nil) // nil config: a nil dereference in raft
	t.Fatal("newRaft with a nil config returned")
}
