package broker

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/share"
)

// A share partition's state is one Pebble key on a node that runs alone,
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
}

func (c ShareGroupConfig) partitionConfig() share.Config {
	return share.Config{LockDurationMs: c.LockDurationMs, DeliveryLimit: c.DeliveryLimit}
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
	}
	return kind.Errorf(kind.ErrInvalidArgument, "unknown share group config %q", name)
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

// loadSharePartition reads a share partition's stored state: nil when
// none was stored for this incarnation of the topic.
func (b *Broker) loadSharePartition(group string, ref SharePartition, created int64, cfg share.Config) (*share.Partition, error) {
	v, closer, err := b.db.Get(shareKey(group, ref))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	if len(v) < 8 || int64(binary.BigEndian.Uint64(v)) != created {
		return nil, nil
	}
	p, err := share.Decode(v[8:], cfg)
	if err != nil {
		return nil, fmt.Errorf("share group %q, %s/%d: %w", group, ref.Topic, ref.Partition, err)
	}
	return p, nil
}

// storeSharePartition makes p's state durable.
func (b *Broker) storeSharePartition(group string, sp *sharePart, p *share.Partition) error {
	enc := p.Encode()
	v := make([]byte, 8, 8+len(enc))
	binary.BigEndian.PutUint64(v, uint64(sp.created))
	v = append(v, enc...)
	if err := b.disk.checkMetadata(); err != nil {
		return err
	}
	return b.db.Set(shareKey(group, sp.ref), v, pebble.Sync)
}
