package meta

import (
	"encoding/json"
	"maps"
	"slices"
)

// The client quotas (Kafka's AlterClientQuotas): per entity (a user
// and/or a client id, or their defaults; the key is the encoding package
// broker gives it), the byte rates by name. They live in AuthState, so
// snapshots carry them and every node enforces them from its applied
// state, without Raft.

// OpAlterQuota changes the quota values of the entity Name: Value is a
// QuotaAlteration's JSON. An entity left without values is removed.
const OpAlterQuota Op = "alter_quota"

// QuotaAlteration sets and removes quota values of one entity.
type QuotaAlteration struct {
	Set    map[string]float64 `json:"set,omitempty"`
	Remove []string           `json:"remove,omitempty"`
}

// applyQuota applies OpAlterQuota (under f.mu); ok is false for other ops.
// An alteration that does not decode (never proposed: the leader encodes
// it) changes nothing.
func (f *FSM) applyQuota(c Command) (ok bool) {
	if c.Op != OpAlterQuota {
		return false
	}
	var alt QuotaAlteration
	if json.Unmarshal(c.Value, &alt) != nil {
		return true
	}
	f.auth.Quotas = AlterQuotas(f.auth.Quotas, c.Name, alt)
	f.authGen++
	return true
}

// AlterQuotas applies alt to the values of entity key in qs (changed in
// place, allocated when nil) and returns qs.
func AlterQuotas(qs map[string]map[string]float64, key string, alt QuotaAlteration) map[string]map[string]float64 {
	if qs == nil {
		qs = map[string]map[string]float64{}
	}
	vs := maps.Clone(qs[key])
	if vs == nil {
		vs = map[string]float64{}
	}
	for _, name := range alt.Remove {
		delete(vs, name)
	}
	maps.Copy(vs, alt.Set)
	if len(vs) == 0 {
		delete(qs, key)
	} else {
		qs[key] = vs
	}
	return qs
}

// Quotas returns a copy of the client quotas and the generation of the
// users, ACLs and quotas they are of.
func (f *FSM) Quotas() (gen uint64, qs map[string]map[string]float64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.authGen, cloneQuotas(f.auth.Quotas)
}

func cloneQuotas(qs map[string]map[string]float64) map[string]map[string]float64 {
	out := make(map[string]map[string]float64, len(qs))
	for _, k := range slices.Sorted(maps.Keys(qs)) {
		out[k] = maps.Clone(qs[k])
	}
	return out
}
