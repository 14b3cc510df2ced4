package meta

import (
	"bytes"
	"maps"
	"slices"
)

// The cluster's users and ACLs. The metadata keeps them as the opaque
// encodings of package auth (Credentials.MarshalBinary under the user
// name; ACL.MarshalBinary, which is unique, as the ACL itself): the
// leader validates and encodes, every node applies the same bytes and
// decodes them when it authenticates or authorizes, locally, without
// Raft. They live beside State (not in it) so that State's copies, taken
// on every topic request, do not copy them; snapshots carry them.

// Auth commands.
const (
	OpPutUser    Op = "put_user"    // Name, Value: create or replace
	OpDeleteUser Op = "delete_user" // Name; a missing user is no change
	OpAddACLs    Op = "add_acls"    // ACLs; present ones are kept once
	OpRemoveACLs Op = "remove_acls" // ACLs: exactly these, as the leader matched them
)

// AuthState is the users and ACLs.
type AuthState struct {
	Users map[string][]byte `json:"users,omitempty"`
	ACLs  [][]byte          `json:"acls,omitempty"` // sorted, unique
	// Quotas are the client quotas by entity (quota.go).
	Quotas map[string]map[string]float64 `json:"quotas,omitempty"`
}

func (a AuthState) clone() AuthState {
	out := AuthState{Users: maps.Clone(a.Users), ACLs: make([][]byte, len(a.ACLs))}
	if len(a.Quotas) > 0 {
		out.Quotas = cloneQuotas(a.Quotas)
	}
	for i, b := range a.ACLs {
		out.ACLs[i] = slices.Clone(b)
	}
	return out
}

// applyAuth applies an auth command (under f.mu); ok is false for other ops.
func (f *FSM) applyAuth(c Command) (ok bool) {
	a := &f.auth
	switch c.Op {
	case OpPutUser:
		if a.Users == nil {
			a.Users = map[string][]byte{}
		}
		a.Users[c.Name] = slices.Clone(c.Value)
	case OpDeleteUser:
		delete(a.Users, c.Name)
	case OpAddACLs:
		for _, acl := range c.ACLs {
			i, found := slices.BinarySearchFunc(a.ACLs, acl, bytes.Compare)
			if !found {
				a.ACLs = slices.Insert(a.ACLs, i, slices.Clone(acl))
			}
		}
	case OpRemoveACLs:
		for _, acl := range c.ACLs {
			if i, found := slices.BinarySearchFunc(a.ACLs, acl, bytes.Compare); found {
				a.ACLs = slices.Delete(a.ACLs, i, i+1)
			}
		}
	default:
		return false
	}
	f.authGen++
	return true
}

// User is a user's stored credentials.
func (f *FSM) User(name string) ([]byte, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, ok := f.auth.Users[name]
	return slices.Clone(b), ok
}

// Users lists the user names, sorted.
func (f *FSM) Users() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return slices.Sorted(maps.Keys(f.auth.Users))
}

// ACLs returns the stored ACLs and their generation, which changes with
// every change of the users or ACLs (a caller rebuilds its index when it
// does).
func (f *FSM) ACLs() (gen uint64, acls [][]byte) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.authGen, f.auth.clone().ACLs
}

// AuthGen is the generation of the users and ACLs.
func (f *FSM) AuthGen() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.authGen
}
