package broker

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/routing"
	"github.com/logd/logd/share"
)

// A share partition's state is one Pebble key on a node that runs alone
// (in a cluster an entry of the partition's Raft log: raftShares below),
// written with pebble.Sync before any answer depends on it:
//
//	key   = "share/" uint16 len(group) group topic 0x00 partition (uint32 big-endian)
//	value = the topic's CreatedMs (int64 big-endian), then share.Partition.Encode
//
// State written for an earlier topic of the same name (another CreatedMs)
// is ignored. A share group's configuration is "sharecfg/" group (JSON).
const (
	shareKeyPrefix    = "share/"
	shareConfigPrefix = "sharecfg/"
)

func shareKey(group string, ref SharePartition) []byte {
	k := make([]byte, 0, len(shareKeyPrefix)+2+len(group)+len(ref.Topic)+5)
	k = append(k, shareKeyPrefix...)
	k = binary.BigEndian.AppendUint16(k, uint16(len(group)))
	k = append(k, group...)
	k = append(k, ref.Topic...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, uint32(ref.Partition))
}

// ShareGroupConfig is a share group's configuration (Kafka's group
// configs of share groups).
type ShareGroupConfig struct {
	// AutoOffsetReset is share.auto.offset.reset: where a share partition
	// first used starts, "latest" (the default) or "earliest".
	AutoOffsetReset string `json:"auto_offset_reset,omitempty"`
	// LockDurationMs is share.record.lock.duration.ms.
	LockDurationMs int64 `json:"record_lock_duration_ms,omitempty"`
	// DeliveryLimit is share.delivery.attempt.limit.
	DeliveryLimit int16 `json:"delivery_attempt_limit,omitempty"`
	// BackoffBaseMs is share.redelivery.backoff.base.ms (0, the default:
	// immediate redelivery); BackoffMaxMs is
	// share.redelivery.backoff.max.ms (0: the default, 60 s).
	BackoffBaseMs int64 `json:"redelivery_backoff_base_ms,omitempty"`
	BackoffMaxMs  int64 `json:"redelivery_backoff_max_ms,omitempty"`
	// DeadLetterOff is share.dlq.enable=false: rejected records and those
	// out of deliveries are archived, not dead-lettered.
	DeadLetterOff bool `json:"dlq_off,omitempty"`
	// DeadLetterTopic is share.dlq.topic: the dead-letter topic ("": the
	// source topic's name with ".dlq" appended).
	DeadLetterTopic string `json:"dlq_topic,omitempty"`
}

// deadLetterTopic is where records of topic go when dead-lettered.
func (c ShareGroupConfig) deadLetterTopic(topic string) string {
	if c.DeadLetterTopic != "" {
		return c.DeadLetterTopic
	}
	return topic + ".dlq"
}

func (c ShareGroupConfig) partitionConfig() share.Config {
	return share.Config{LockDurationMs: c.LockDurationMs, DeliveryLimit: c.DeliveryLimit,
		BackoffBaseMs: c.BackoffBaseMs, BackoffMaxMs: c.BackoffMaxMs}
}

// The bounds of the redelivery backoff's configs: up to an hour.
const maxShareBackoffMs = 3_600_000

func parseBackoffMs(name, value string, least int64) (int64, error) {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < least || n > maxShareBackoffMs {
		return 0, kind.Errorf(kind.ErrInvalidArgument, "%s is %d to %d, not %q", name, least, maxShareBackoffMs, value)
	}
	return n, nil
}

// Set applies one Kafka group config by name.
func (c *ShareGroupConfig) Set(name, value string) error {
	switch name {
	case "share.auto.offset.reset":
		if value != "latest" && value != "earliest" {
			return kind.Errorf(kind.ErrInvalidArgument, "share.auto.offset.reset is latest or earliest, not %q", value)
		}
		c.AutoOffsetReset = value
		return nil
	case "share.record.lock.duration.ms":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 1000 || n > 3_600_000 {
			return kind.Errorf(kind.ErrInvalidArgument, "share.record.lock.duration.ms is 1000 to 3600000, not %q", value)
		}
		c.LockDurationMs = n
		return nil
	case "share.delivery.attempt.limit":
		n, err := strconv.ParseInt(value, 10, 16)
		if err != nil || n < 1 || n > 10 {
			return kind.Errorf(kind.ErrInvalidArgument, "share.delivery.attempt.limit is 1 to 10, not %q", value)
		}
		c.DeliveryLimit = int16(n)
		return nil
	case "share.redelivery.backoff.base.ms":
		n, err := parseBackoffMs(name, value, 0)
		if err != nil {
			return err
		}
		c.BackoffBaseMs = n
		return nil
	case "share.redelivery.backoff.max.ms":
		n, err := parseBackoffMs(name, value, 1)
		if err != nil {
			return err
		}
		c.BackoffMaxMs = n
		return nil
	case "share.dlq.enable":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return kind.Errorf(kind.ErrInvalidArgument, "share.dlq.enable is true or false, not %q", value)
		}
		c.DeadLetterOff = !b
		return nil
	case "share.dlq.topic":
		if err := routing.ValidateTopicName(value); err != nil {
			return kind.Errorf(kind.ErrInvalidArgument, "share.dlq.topic: %v", err)
		}
		c.DeadLetterTopic = value
		return nil
	}
	return kind.Errorf(kind.ErrInvalidArgument, "unknown share group config %q", name)
}

// Unset returns one Kafka group config, by name, to its default.
func (c *ShareGroupConfig) Unset(name string) error {
	switch name {
	case "share.auto.offset.reset":
		c.AutoOffsetReset = ""
	case "share.record.lock.duration.ms":
		c.LockDurationMs = 0
	case "share.delivery.attempt.limit":
		c.DeliveryLimit = 0
	case "share.redelivery.backoff.base.ms":
		c.BackoffBaseMs = 0
	case "share.redelivery.backoff.max.ms":
		c.BackoffMaxMs = 0
	case "share.dlq.enable":
		c.DeadLetterOff = false
	case "share.dlq.topic":
		c.DeadLetterTopic = ""
	default:
		return kind.Errorf(kind.ErrInvalidArgument, "unknown share group config %q", name)
	}
	return nil
}

func (b *Broker) loadShareConfig(group string) ShareGroupConfig {
	var c ShareGroupConfig
	v, closer, err := b.db.Get([]byte(shareConfigPrefix + group))
	if err != nil {
		return c
	}
	defer closer.Close()
	if err := json.Unmarshal(v, &c); err != nil {
		b.logger.Warn("share group config unreadable: using the defaults", "group", group, "err", err)
		return ShareGroupConfig{}
	}
	return c
}

func (b *Broker) storeShareConfig(group string, c ShareGroupConfig) error {
	v, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := b.disk.checkMetadata(); err != nil {
		return err
	}
	return b.db.Set([]byte(shareConfigPrefix+group), v, pebble.Sync)
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
