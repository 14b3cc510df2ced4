package replication

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func TestPebbleLogStore(t *testing.T) {
	fs := vfs.NewCrashableMem()
	db := openPebble(t, "db", fs)
	s := NewPebbleLogStore(db, "meta")
	other := NewPebbleLogStore(db, "meta2")
	if f, _ := s.FirstIndex(); f != 0 {
		t.Fatalf("empty: first %d", f)
	}
	var want []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		l := &raft.Log{Index: i, Term: 1 + i/4, Type: raft.LogType(i % 6), Data: fmt.Appendf(nil, "cmd %d", i)}
		if i == 3 {
			l.Extensions = []byte("ext")
		}
		if i == 4 {
			l.Data = nil
		}
		want = append(want, l)
	}
	if err := s.StoreLogs(want[:5]); err != nil {
		t.Fatal(err)
	}
	for _, l := range want[5:] {
		if err := s.StoreLog(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.StoreLog(&raft.Log{Index: 99, Term: 9}); err != nil {
		t.Fatal(err)
	}
	check := func(first, last uint64) {
		t.Helper()
		if f, _ := s.FirstIndex(); f != first {
			t.Fatalf("first %d, want %d", f, first)
		}
		if l, _ := s.LastIndex(); l != last {
			t.Fatalf("last %d, want %d", l, last)
		}
		for _, w := range want {
			var got raft.Log
			err := s.GetLog(w.Index, &got)
			if w.Index < first || w.Index > last {
				if !errors.Is(err, raft.ErrLogNotFound) {
					t.Fatalf("GetLog(%d) outside [%d, %d]: %v", w.Index, first, last, err)
				}
				continue
			}
			if err != nil || got.Index != w.Index || got.Term != w.Term || got.Type != w.Type || !bytes.Equal(got.Data, w.Data) || !bytes.Equal(got.Extensions, w.Extensions) {
				t.Fatalf("GetLog(%d) = %+v, %v; want %+v", w.Index, got, err, w)
			}
		}
	}
	check(1, 10)
	if err := s.DeleteRange(8, 10); err != nil { // conflicting suffix
		t.Fatal(err)
	}
	check(1, 7)
	if err := s.DeleteRange(1, 3); err != nil { // compaction
		t.Fatal(err)
	}
	check(4, 7)

	// Synced: a crash keeps everything.
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	db.Close()
	db = openPebble(t, "db", crashed)
	defer db.Close()
	s = NewPebbleLogStore(db, "meta")
	check(4, 7)
	if l, _ := NewPebbleLogStore(db, "meta2").LastIndex(); l != 99 {
		t.Fatalf("another group's log: last %d", l)
	}
}

func TestPebbleLogCorruptEntry(t *testing.T) {
	for _, v := range [][]byte{nil, {9}, {1, 0, 0, 0, 0, 0, 0, 0, 1, 0}, {1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 5, 'a'}} {
		if _, err := decodePebbleLog(v); !errors.Is(err, errPebbleLogCorrupt) {
			t.Fatalf("decode %v: %v", v, err)
		}
	}
}

// counterFSM counts applied commands: a stand-in for the metadata state
// machine.
type counterFSM struct{ n int }

func (f *counterFSM) Apply(*raft.Log) any                 { f.n++; return f.n }
func (f *counterFSM) Snapshot() (raft.FSMSnapshot, error) { return &fsmSnapshot{}, nil }
func (f *counterFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

// Real Raft on the Pebble log store compacts it after a snapshot.
func TestPebbleLogStoreUnderRaft(t *testing.T) {
	db := openPebble(t, "db", vfs.NewMem())
	defer db.Close()
	logs := NewPebbleLogStore(db, "meta")
	_, trans := raft.NewInmemTransport("")
	conf := raft.DefaultConfig()
	conf.LocalID = "n1"
	conf.TrailingLogs = 5
	conf.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Warn})
	r, err := raft.NewRaft(conf, &counterFSM{}, logs, NewStableStore(db, "meta"), raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown()
	if err := r.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: trans.LocalAddr()}}}).Error(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); r.State() != raft.Leader; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
	}
	for i := 0; i < 30; i++ {
		if err := r.Apply([]byte("x"), 10*time.Second).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	first, _ := logs.FirstIndex()
	last, _ := logs.LastIndex()
	if last-first+1 != 5 {
		t.Fatalf("after compaction: [%d, %d], want the last 5 entries", first, last)
	}
}

// The metadata log's entry decoder never panics, and what it accepts
// survives an encode/decode round trip unchanged.
func FuzzDecodePebbleLog(f *testing.F) {
	f.Add(encodePebbleLog(&raft.Log{Term: 3, Type: raft.LogCommand, Data: []byte("create topic"), Extensions: []byte("x")}))
	f.Add(encodePebbleLog(&raft.Log{Term: 1, Type: raft.LogNoop}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, v []byte) {
		l, err := decodePebbleLog(v)
		if err != nil {
			if !errors.Is(err, errPebbleLogCorrupt) {
				t.Fatalf("error %v is not errPebbleLogCorrupt", err)
			}
			return
		}
		again, err := decodePebbleLog(encodePebbleLog(&l))
		if err != nil || again.Term != l.Term || again.Type != l.Type || !bytes.Equal(again.Data, l.Data) || !bytes.Equal(again.Extensions, l.Extensions) {
			t.Fatalf("decoded %+v; after a round trip %+v, %v", l, again, err)
		}
	})
}
