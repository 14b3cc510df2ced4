package broker

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication"
)

// A share partition's state is one Pebble key on a node that runs alone
// (in a cluster an entry of the partition's Raft log: raftShares below),
// written with pebble.Sync before any answer depends on it:
//
//	key   = "share/" uint16 len(group) group topic 0x00 partition (uint32 big-endian)
//	value = the topic's CreatedMs (int64 big-endian), then share.Partition.Encode
//
// State written for an earlier topic of the same name (another CreatedMs)
// is ignored.
const shareKeyPrefix = "share/"

func shareKey(group string, ref SharePartition) []byte {
	k := make([]byte, 0, len(shareKeyPrefix)+2+len(group)+len(ref.Topic)+5)
	k = append(k, shareKeyPrefix...)
	k = binary.BigEndian.AppendUint16(k, uint16(len(group)))
	k = append(k, group...)
	k = append(k, ref.Topic...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, uint32(ref.Partition))
}

// shareStore is where share partitions' states are kept, durable before
// any answer depends on them; the control plane chooses it (sharesOf):
// Pebble on a node that runs alone, the partition's Raft log in a
// cluster. A state's version tells a leader whether another node wrote
// it since it last did (a leader elsewhere meanwhile): it then loads the
// stored state again.
type shareStore interface {
	// version is the version of group's stored state of p: nil error
	// only on a node that may serve p's share partitions now (in a
	// cluster p's leader, with every committed change applied; else a
	// *NotLeaderError).
	version(ctx context.Context, p *partition.Partition, group string) (uint64, error)
	// load is the state stored for the topic's incarnation created
	// (ok false: none), and its version.
	load(ctx context.Context, p *partition.Partition, group string, created int64) (enc []byte, ver uint64, ok bool, err error)
	// store makes a state durable and returns its version.
	store(ctx context.Context, p *partition.Partition, group string, created int64, enc []byte) (uint64, error)
}

func (l *localPlane) shares(b *Broker) shareStore { return pebbleShares{b} }
func (r *raftPlane) shares(*Broker) shareStore    { return raftShares{r.cl} }

// pebbleShares keeps the states in the node's Pebble store; the node is
// their only writer, so every version is 0.
type pebbleShares struct{ b *Broker }

func (s pebbleShares) version(context.Context, *partition.Partition, string) (uint64, error) {
	return 0, nil
}

func (s pebbleShares) load(_ context.Context, p *partition.Partition, group string, created int64) ([]byte, uint64, bool, error) {
	v, closer, err := s.b.db.Get(shareKey(group, SharePartition{Topic: p.Topic, Partition: p.ID}))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	defer closer.Close()
	if len(v) < 8 || int64(binary.BigEndian.Uint64(v)) != created {
		return nil, 0, false, nil
	}
	return append([]byte(nil), v[8:]...), 0, true, nil
}

func (s pebbleShares) store(_ context.Context, p *partition.Partition, group string, created int64, enc []byte) (uint64, error) {
	v := make([]byte, 8, 8+len(enc))
	binary.BigEndian.PutUint64(v, uint64(created))
	v = append(v, enc...)
	if err := s.b.disk.checkMetadata(); err != nil {
		return 0, err
	}
	return 0, s.b.db.Set(shareKey(group, SharePartition{Topic: p.Topic, Partition: p.ID}), v, pebble.Sync)
}

// raftShares keeps the states in the partitions' Raft logs
// (replication.Replica.PutShareState), served by each partition's leader
// once its term's barrier is applied; a version is the Raft index of the
// entry that wrote the state. The Raft group is one incarnation of the
// topic, so created is implied.
type raftShares struct{ cl *cluster.Cluster }

func (s raftShares) leading(ctx context.Context, p *partition.Partition) (*replication.Replica, error) {
	rep, err := s.cl.Replica(ctx, p)
	if err != nil {
		return nil, err
	}
	if _, err := rep.Leading(ctx); err != nil {
		return nil, s.cl.RaftError(err)
	}
	return rep, nil
}

func (s raftShares) version(ctx context.Context, p *partition.Partition, group string) (uint64, error) {
	rep, err := s.leading(ctx, p)
	if err != nil {
		return 0, err
	}
	st, _ := rep.ShareState(group)
	return st.Index, nil
}

func (s raftShares) load(ctx context.Context, p *partition.Partition, group string, _ int64) ([]byte, uint64, bool, error) {
	rep, err := s.leading(ctx, p)
	if err != nil {
		return nil, 0, false, err
	}
	st, ok := rep.ShareState(group)
	return st.State, st.Index, ok, nil
}

func (s raftShares) store(ctx context.Context, p *partition.Partition, group string, _ int64, enc []byte) (uint64, error) {
	rep, err := s.cl.Replica(ctx, p)
	if err != nil {
		return 0, err
	}
	ver, err := rep.PutShareState(ctx, group, enc)
	if err != nil {
		return 0, s.cl.RaftError(err)
	}
	return ver, nil
}
