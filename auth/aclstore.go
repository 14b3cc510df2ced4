package auth

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// ACLSource hands out the current ACLs for matching; the Authorizer needs
// nothing more.
type ACLSource interface {
	Index() *ACLIndex
}

// ACLStore is where ACLs live. The core backs it with the cluster metadata
// (each ACL stored under its MarshalBinary encoding, replicated through
// Raft) and rebuilds the index with NewACLIndex when the metadata changes;
// `logd acl add|remove|list` and Kafka's CreateAcls, DeleteAcls and
// DescribeAcls are Add, Remove and List.
type ACLStore interface {
	ACLSource
	// Add stores the ACLs, all or none: each is validated first. Adding an
	// ACL that exists already is not an error.
	Add(acls ...ACL) error
	// Remove deletes every ACL the filter matches and returns them.
	Remove(f ACLFilter) ([]ACL, error)
	// List returns the ACLs the filter matches, sorted.
	List(f ACLFilter) ([]ACL, error)
}

// ACLFilter selects ACLs by the fields that are set; the zero filter
// matches every ACL (Kafka's ANY). Name matches an ACL's name exactly,
// within PatternType when that is set.
type ACLFilter struct {
	Principal    Principal
	Permission   Permission
	Operation    Operation
	ResourceType ResourceType
	PatternType  PatternType
	Name         string
}

// Matches reports whether the filter selects a.
func (f ACLFilter) Matches(a ACL) bool {
	return (f.Principal.IsZero() || f.Principal == a.Principal) &&
		(f.Permission == 0 || f.Permission == a.Permission) &&
		(f.Operation == 0 || f.Operation == a.Operation) &&
		(f.ResourceType == 0 || f.ResourceType == a.ResourceType) &&
		(f.PatternType == 0 || f.PatternType == a.PatternType) &&
		(f.Name == "" || f.Name == a.Name)
}

// ACLText is an ACL or a filter in its text form (the gRPC API's and the
// CLI's): the names ParsePrincipal, ParsePermission, ParseOperation,
// ParseResourceType and ParsePatternType read. An empty field is unset.
type ACLText struct {
	Principal, Permission, Operation, ResourceType, PatternType, Name string
}

// Filter reads t as a filter: unset fields match anything. The error is
// the first field's that does not parse.
func (t ACLText) Filter() (ACLFilter, error) {
	f := ACLFilter{Name: t.Name}
	return f, cmp.Or(
		parseSet(t.Principal, ParsePrincipal, &f.Principal),
		parseSet(t.Permission, ParsePermission, &f.Permission),
		parseSet(t.Operation, ParseOperation, &f.Operation),
		parseSet(t.ResourceType, ParseResourceType, &f.ResourceType),
		parseSet(t.PatternType, ParsePatternType, &f.PatternType))
}

// ACL reads t as a whole ACL: every field must parse, and the ACL be
// valid (ACL.Validate).
func (t ACLText) ACL() (ACL, error) {
	f, err := t.Filter()
	if err != nil {
		return ACL{}, err
	}
	a := ACL(f)
	return a, a.Validate()
}

// parseSet sets *dst to s parsed, unless s is empty (unset).
func parseSet[T any](s string, parse func(string) (T, error), dst *T) error {
	if s == "" {
		return nil
	}
	v, err := parse(s)
	*dst = v
	return err
}

// ExactFilter is the filter that matches a and nothing else (`logd acl
// remove` builds one from its flags).
func ExactFilter(a ACL) ACLFilter { return ACLFilter(a) }

// MemoryACLStore is an ACLStore in memory: for tests, and the model of the
// core's.
type MemoryACLStore struct {
	mu    sync.Mutex
	acls  map[ACL]struct{}
	index atomic.Pointer[ACLIndex]
}

// NewMemoryACLStore is an empty store.
func NewMemoryACLStore() *MemoryACLStore {
	s := &MemoryACLStore{acls: map[ACL]struct{}{}}
	s.index.Store(NewACLIndex(nil))
	return s
}

func (s *MemoryACLStore) Index() *ACLIndex { return s.index.Load() }

func (s *MemoryACLStore) Add(acls ...ACL) error {
	for _, a := range acls {
		if err := a.Validate(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range acls {
		s.acls[a] = struct{}{}
	}
	s.reindexLocked()
	return nil
}

func (s *MemoryACLStore) Remove(f ACLFilter) ([]ACL, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var removed []ACL
	for a := range s.acls {
		if f.Matches(a) {
			removed = append(removed, a)
			delete(s.acls, a)
		}
	}
	s.reindexLocked()
	SortACLs(removed)
	return removed, nil
}

func (s *MemoryACLStore) List(f ACLFilter) ([]ACL, error) {
	var out []ACL
	for _, a := range s.Index().acls {
		if f.Matches(a) {
			out = append(out, a)
		}
	}
	SortACLs(out)
	return out, nil
}

// reindexLocked builds the index of the current set: ACL writes are rare,
// checks are on every request, so writes pay.
func (s *MemoryACLStore) reindexLocked() {
	all := make([]ACL, 0, len(s.acls))
	for a := range s.acls {
		all = append(all, a)
	}
	SortACLs(all)
	s.index.Store(NewACLIndex(all))
}

// SortACLs orders ACLs for listing: by principal, resource type, name,
// pattern type, operation, permission.
func SortACLs(acls []ACL) {
	slices.SortFunc(acls, func(a, b ACL) int {
		return cmp.Or(
			cmp.Compare(a.Principal.String(), b.Principal.String()),
			cmp.Compare(a.ResourceType, b.ResourceType),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.PatternType, b.PatternType),
			cmp.Compare(a.Operation, b.Operation),
			cmp.Compare(a.Permission, b.Permission),
		)
	})
}
