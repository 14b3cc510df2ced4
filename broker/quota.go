package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/replication/meta"
)

// Client quotas, as Kafka's (KIP-55, KIP-546): byte rates a user and/or a
// client id may produce and fetch, stored through the control plane (the
// cluster metadata's AuthState, replicated; a node that runs alone keeps
// them in its Pebble store) and enforced by every node from its own copy
// (quotaenforce.go).

// The quota values served.
const (
	QuotaProducerByteRate = "producer_byte_rate"
	QuotaConsumerByteRate = "consumer_byte_rate"
)

// The entity types a quota names.
const (
	QuotaUser     = "user"
	QuotaClientID = "client-id"
)

// QuotaEntityPart is one part of a quota's entity: a user or a client id
// by name, or the default one (Default: every user, or client id, without
// a quota of its own).
type QuotaEntityPart struct {
	Type    string `json:"type"`
	Name    string `json:"name,omitempty"`
	Default bool   `json:"default,omitempty"`
}

// QuotaEntity is whom a quota applies to: a user, a client id, or a user's
// client id (a user part, then a client-id part).
type QuotaEntity []QuotaEntityPart

// ClientQuota is an entity's quota values by name (QuotaProducerByteRate,
// QuotaConsumerByteRate): bytes per second.
type ClientQuota struct {
	Entity QuotaEntity
	Values map[string]float64
}

// QuotaFilter picks quotas by one entity type (DescribeClientQuotas):
// Match "exact" the entity's Name, "default" its default, "any" any
// value of the type.
type QuotaFilter struct {
	Type  string
	Match string
	Name  string
}

// key is the entity's canonical encoding, its key in the store; it
// refuses an entity logd cannot hold (kind.ErrInvalidArgument).
func (e QuotaEntity) key() (string, error) {
	if len(e) == 0 || len(e) > 2 {
		return "", kind.Errorf(kind.ErrInvalidArgument, "a quota entity names a user, a client id or both, got %d parts", len(e))
	}
	seen := map[string]bool{}
	for _, p := range e {
		if p.Type != QuotaUser && p.Type != QuotaClientID {
			return "", kind.Errorf(kind.ErrInvalidArgument, "quota entity type %q: logd has %q and %q", p.Type, QuotaUser, QuotaClientID)
		}
		if seen[p.Type] {
			return "", kind.Errorf(kind.ErrInvalidArgument, "quota entity type %q named twice", p.Type)
		}
		seen[p.Type] = true
		if p.Default && p.Name != "" {
			return "", kind.Errorf(kind.ErrInvalidArgument, "quota entity %s: the default has no name", p.Type)
		}
	}
	c := slices.Clone(e)
	slices.SortFunc(c, func(a, b QuotaEntityPart) int { return -strings.Compare(a.Type, b.Type) }) // user first
	b, err := json.Marshal(c)
	return string(b), err
}

func parseQuotaKey(key string) (QuotaEntity, error) {
	var e QuotaEntity
	err := json.Unmarshal([]byte(key), &e)
	return e, err
}

// matches reports whether e passes every filter; strict: e has no part
// the filters do not name.
func (e QuotaEntity) matches(fs []QuotaFilter, strict bool) bool {
	if strict && len(e) != len(fs) {
		return false
	}
	for _, f := range fs {
		i := slices.IndexFunc(e, func(p QuotaEntityPart) bool { return p.Type == f.Type })
		if i < 0 {
			return false
		}
		p := e[i]
		switch f.Match {
		case "exact":
			if p.Default || p.Name != f.Name {
				return false
			}
		case "default":
			if !p.Default {
				return false
			}
		}
	}
	return true
}

// ClientQuotas lists the quotas whose entities pass filters (all with
// none), as DescribeClientQuotas: describe on the cluster. A filter of
// another type or match is kind.ErrInvalidArgument.
func (b *Broker) ClientQuotas(ctx context.Context, pr Principal, filters []QuotaFilter, strict bool) ([]ClientQuota, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Cluster()); err != nil {
		return nil, err
	}
	for _, f := range filters {
		if f.Type != QuotaUser && f.Type != QuotaClientID {
			return nil, kind.Errorf(kind.ErrInvalidArgument, "quota entity type %q: logd has %q and %q", f.Type, QuotaUser, QuotaClientID)
		}
		if f.Match != "exact" && f.Match != "default" && f.Match != "any" {
			return nil, kind.Errorf(kind.ErrInvalidArgument, "quota filter match %q: want exact, default or any", f.Match)
		}
	}
	_, qs := b.plane.quotas()
	var out []ClientQuota
	for _, k := range slices.Sorted(maps.Keys(qs)) {
		e, err := parseQuotaKey(k)
		if err != nil || !e.matches(filters, strict) {
			continue
		}
		out = append(out, ClientQuota{Entity: e, Values: qs[k]})
	}
	return out, nil
}

// AlterClientQuota sets and removes an entity's quota values, as
// AlterClientQuotas: alter on the cluster. Values are byte rates above 0
// of the names served (QuotaProducerByteRate, QuotaConsumerByteRate);
// anything else is kind.ErrInvalidArgument. validateOnly checks and
// stores nothing.
func (b *Broker) AlterClientQuota(ctx context.Context, pr Principal, e QuotaEntity, set map[string]float64, remove []string, validateOnly bool) error {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
		return err
	}
	key, err := e.key()
	if err != nil {
		return err
	}
	for name, v := range set {
		if err := checkQuotaName(name); err != nil {
			return err
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return kind.Errorf(kind.ErrInvalidArgument, "quota %s: a byte rate above 0, got %v", name, v)
		}
	}
	for _, name := range remove {
		if err := checkQuotaName(name); err != nil {
			return err
		}
	}
	if validateOnly {
		return nil
	}
	if err := b.disk.checkRemedy(); err != nil {
		return err
	}
	err = b.plane.alterQuota(ctx, key, meta.QuotaAlteration{Set: set, Remove: remove})
	if addr, ok := passOn(ctx, err); ok {
		err = b.peerCall(ctx, addr, opAlterQuota, pr, quotaReq{Entity: e, Set: set, Remove: remove}, nil)
	}
	return err
}

// opAlterQuota is AlterClientQuota made of the metadata leader (peer.go).
const opAlterQuota = "quota.alter"

type quotaReq struct {
	Entity QuotaEntity        `json:"entity"`
	Set    map[string]float64 `json:"set,omitempty"`
	Remove []string           `json:"remove,omitempty"`
}

// handleQuotaPeers serves the quota changes other nodes pass on, for the
// principal they name.
func (b *Broker) handleQuotaPeers() {
	handle(b, opAlterQuota, func(ctx context.Context, pr Principal, r quotaReq) (any, error) {
		return none{}, b.AlterClientQuota(ctx, pr, r.Entity, r.Set, r.Remove, false)
	})
}

func checkQuotaName(name string) error {
	if name != QuotaProducerByteRate && name != QuotaConsumerByteRate {
		return kind.Errorf(kind.ErrInvalidArgument, "quota %q: logd has %s and %s", name, QuotaProducerByteRate, QuotaConsumerByteRate)
	}
	return nil
}

func (r *raftPlane) quotas() (uint64, map[string]map[string]float64) { return r.cl.Auth().Quotas() }

func (r *raftPlane) alterQuota(ctx context.Context, key string, alt meta.QuotaAlteration) error {
	enc, err := json.Marshal(alt)
	if err != nil {
		return fmt.Errorf("alter quota: %w", err)
	}
	return r.cl.ApplyAuth(ctx, &meta.Command{Op: meta.OpAlterQuota, Name: key, Value: enc}, nil)
}
