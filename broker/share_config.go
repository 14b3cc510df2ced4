package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/routing"
	"github.com/logd/logd/share"
)

// A share group's configuration (Kafka's group configs of share groups)
// is control-plane state, like a topic's: kept where the control plane
// keeps its writes (a Pebble key "sharecfg/" group on a node that runs
// alone; in a cluster the metadata group, meta.OpShareGroupConfig),
// encoded as ShareGroupConfig's JSON (none: every config at its default),
// and read by every node from what it applied, since each partition's
// leader serves the group's share partitions there. A node caches a
// group's configuration with the count of changes it is of
// (shareGroupConfigGen) and reads it again when the count moved; a share
// partition takes the new configuration at its next use (shareCurrent).

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
	// KeyOrdering is share.key.ordering=true: a record is handed out only
	// once every earlier record of its key is done (share.Config.KeyOrdering).
	KeyOrdering bool `json:"key_ordering,omitempty"`
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
		BackoffBaseMs: c.BackoffBaseMs, BackoffMaxMs: c.BackoffMaxMs, KeyOrdering: c.KeyOrdering}
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
	case "share.key.ordering":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return kind.Errorf(kind.ErrInvalidArgument, "share.key.ordering is true or false, not %q", value)
		}
		c.KeyOrdering = b
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
	case "share.key.ordering":
		c.KeyOrdering = false
	default:
		return kind.Errorf(kind.ErrInvalidArgument, "unknown share group config %q", name)
	}
	return nil
}

// encode is c's stored form: nil for the defaults.
func (c ShareGroupConfig) encode() ([]byte, error) {
	if c == (ShareGroupConfig{}) {
		return nil, nil
	}
	return json.Marshal(c)
}

// SetShareGroupConfig sets share group configs by their Kafka names
// (share.auto.offset.reset, share.record.lock.duration.ms,
// share.delivery.attempt.limit, share.redelivery.backoff.base.ms,
// share.redelivery.backoff.max.ms, share.dlq.enable, share.dlq.topic,
// share.key.ordering); it needs alter on the group.
func (b *Broker) SetShareGroupConfig(ctx context.Context, p Principal, group string, set map[string]string) error {
	ch := make(map[string]*string, len(set))
	for k, v := range set {
		ch[k] = &v
	}
	return b.AlterShareGroupConfig(ctx, p, group, ch, false)
}

// AlterShareGroupConfig changes share group configs by their Kafka names
// (as Kafka's IncrementalAlterConfigs of resource type GROUP): a nil value
// returns the config to its default. With validateOnly it checks the
// change and stores nothing. It needs alter on the group. In a cluster the
// change is made on the metadata leader (passed on there), on the
// configuration it holds, and every node takes it from the metadata.
func (b *Broker) AlterShareGroupConfig(ctx context.Context, p Principal, group string, change map[string]*string, validateOnly bool) error {
	if err := b.Authorize(ctx, p, auth.OpAlter, auth.Group(group)); err != nil {
		return err
	}
	if group == "" {
		return kind.Errorf(kind.ErrInvalidArgument, "share group config: name the group")
	}
	if _, err := b.ShareGroupConfigOf(group).apply(change); err != nil || validateOnly {
		return err
	}
	err := b.alterShareGroupConfig(ctx, group, change)
	if addr, ok := passOn(ctx, err); ok {
		err = b.peerCall(ctx, addr, opShareGroupConfig, p, shareConfigReq{Group: group, Change: change}, nil)
	}
	return err
}

// apply returns c with change applied.
func (c ShareGroupConfig) apply(change map[string]*string) (ShareGroupConfig, error) {
	for k, v := range change {
		var err error
		if v == nil {
			err = c.Unset(k)
		} else {
			err = c.Set(k, *v)
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

// alterShareGroupConfig applies change to group's current configuration
// and stores the result, where the control plane writes (the metadata
// leader, after a read barrier, so that the change applies to the last
// configuration stored; *NotLeaderError elsewhere).
func (b *Broker) alterShareGroupConfig(ctx context.Context, group string, change map[string]*string) error {
	b.share.cfgMu.Lock()
	defer b.share.cfgMu.Unlock()
	if err := b.plane.currentMeta(ctx); err != nil {
		return err
	}
	enc, _ := b.plane.shareGroupConfig(group)
	cfg, err := decodeShareGroupConfig(enc)
	if err != nil {
		return err
	}
	if cfg, err = cfg.apply(change); err != nil {
		return err
	}
	if enc, err = cfg.encode(); err != nil {
		return err
	}
	if err := b.disk.checkMetadata(); err != nil {
		return err
	}
	return b.plane.putShareGroupConfig(ctx, group, enc)
}

func decodeShareGroupConfig(enc []byte) (ShareGroupConfig, error) {
	var c ShareGroupConfig
	if len(enc) == 0 {
		return c, nil
	}
	if err := json.Unmarshal(enc, &c); err != nil {
		return ShareGroupConfig{}, kind.Errorf(kind.ErrFailedPrecondition, "the stored share group configuration does not read: %v", err)
	}
	return c, nil
}

// opShareGroupConfig is AlterShareGroupConfig made of the metadata
// leader (peer.go).
const opShareGroupConfig = "share.config"

type shareConfigReq struct {
	Group  string             `json:"group"`
	Change map[string]*string `json:"change"`
}

// handleShareConfigPeers serves the share group configuration changes
// other nodes pass on, for the principal they name.
func (b *Broker) handleShareConfigPeers() {
	handle(b, opShareGroupConfig, func(ctx context.Context, pr Principal, r shareConfigReq) (any, error) {
		return none{}, b.AlterShareGroupConfig(ctx, pr, r.Group, r.Change, false)
	})
}

// ShareGroupConfigOf is the share group's configuration as this node
// applied it (the zero value: every config at its default).
func (b *Broker) ShareGroupConfigOf(group string) ShareGroupConfig {
	enc, _ := b.plane.shareGroupConfig(group)
	c, err := decodeShareGroupConfig(enc)
	if err != nil {
		b.logger.Warn("share group config unreadable: using the defaults", "group", group, "err", err)
	}
	return c
}

// ShareConfigEntry is one share group config as DescribeConfigs of a
// group shows it: its Kafka name, its value in force (the default when
// not set) and whether it is set on the group.
type ShareConfigEntry struct {
	Name, Value string
	Set         bool
}

// Entries lists every share group config logd has, by Kafka name, with
// the value in force. share.dlq.topic not set is "" (the source topic's
// name with ".dlq" appended).
func (c ShareGroupConfig) Entries() []ShareConfigEntry {
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	or := func(v, def int64) int64 {
		if v == 0 {
			return def
		}
		return v
	}
	reset := c.AutoOffsetReset
	if reset == "" {
		reset = "latest"
	}
	limit := int64(c.DeliveryLimit)
	return []ShareConfigEntry{
		{"share.auto.offset.reset", reset, c.AutoOffsetReset != ""},
		{"share.record.lock.duration.ms", i64(or(c.LockDurationMs, share.DefaultLockDurationMs)), c.LockDurationMs != 0},
		{"share.delivery.attempt.limit", i64(or(limit, share.DefaultDeliveryLimit)), limit != 0},
		{"share.redelivery.backoff.base.ms", i64(c.BackoffBaseMs), c.BackoffBaseMs != 0},
		{"share.redelivery.backoff.max.ms", i64(or(c.BackoffMaxMs, share.DefaultBackoffMaxMs)), c.BackoffMaxMs != 0},
		{"share.dlq.enable", strconv.FormatBool(!c.DeadLetterOff), c.DeadLetterOff},
		{"share.dlq.topic", c.DeadLetterTopic, c.DeadLetterTopic != ""},
		{"share.key.ordering", strconv.FormatBool(c.KeyOrdering), c.KeyOrdering},
	}
}

// DescribeShareGroupConfig is group's configuration as this node applied
// it (DescribeConfigs of resource type GROUP); it needs describe on the
// group.
func (b *Broker) DescribeShareGroupConfig(ctx context.Context, p Principal, group string) (ShareGroupConfig, error) {
	if err := b.Authorize(ctx, p, auth.OpDescribe, auth.Group(group)); err != nil {
		return ShareGroupConfig{}, err
	}
	if group == "" {
		return ShareGroupConfig{}, kind.Errorf(kind.ErrInvalidArgument, "share group config: name the group")
	}
	return b.ShareGroupConfigOf(group), nil
}

// cachedShareConfig is a group's configuration with the count of changes
// it is of.
type cachedShareConfig struct {
	cfg ShareGroupConfig
	gen uint64
}

// shareConfigOf is g's configuration, read again when it changed, with
// the count of changes it is of.
func (b *Broker) shareConfigOf(g *shareGroup) (ShareGroupConfig, uint64) {
	gen := b.plane.shareGroupConfigGen()
	if c := g.cfg.Load(); c != nil && c.gen == gen {
		return c.cfg, c.gen
	}
	enc, gen := b.plane.shareGroupConfig(g.name)
	c, err := decodeShareGroupConfig(enc)
	if err != nil {
		b.logger.Warn("share group config unreadable: using the defaults", "group", g.name, "err", err)
	}
	g.cfg.Store(&cachedShareConfig{cfg: c, gen: gen})
	return c, gen
}

// The configurations of a node that runs alone.

const shareConfigPrefix = "sharecfg/"

func (l *localPlane) shareGroupConfig(group string) ([]byte, uint64) {
	gen := l.shareGen.Load()
	v, closer, err := l.db.Get([]byte(shareConfigPrefix + group))
	if err != nil {
		return nil, gen // not found, or unreadable: the writes say so
	}
	defer closer.Close()
	return bytes.Clone(v), gen
}

func (l *localPlane) shareGroupConfigGen() uint64 { return l.shareGen.Load() }

func (l *localPlane) putShareGroupConfig(_ context.Context, group string, enc []byte) error {
	var err error
	if len(enc) == 0 {
		err = l.db.Delete([]byte(shareConfigPrefix+group), pebble.Sync)
	} else {
		err = l.db.Set([]byte(shareConfigPrefix+group), enc, pebble.Sync)
	}
	l.shareGen.Add(1)
	return err
}

// The configurations of a cluster: the metadata's.

func (r *raftPlane) shareGroupConfig(group string) ([]byte, uint64) {
	return r.cl.ShareGroupConfig(group)
}

func (r *raftPlane) shareGroupConfigGen() uint64 { return r.cl.ShareGroupConfigGen() }

func (r *raftPlane) putShareGroupConfig(ctx context.Context, group string, enc []byte) error {
	return r.cl.RecordShareGroupConfig(ctx, group, enc)
}

// resetOffset is where a share partition with no state starts in l, as
// share.auto.offset.reset says: the log start for earliest, else the high
// watermark.
func (c ShareGroupConfig) resetOffset(l interface {
	StartOffset() int64
	HighWatermark() int64
}) int64 {
	if c.AutoOffsetReset == "earliest" {
		return l.StartOffset()
	}
	return l.HighWatermark()
}
