package auth

import (
	"slices"
)

// Decision is what the ACLs say about one request.
type Decision uint8

const (
	// NoMatch: no ACL allows or denies it (a refusal under --authz on).
	NoMatch Decision = iota
	// Allowed: an allow ACL matches and no deny ACL does.
	Allowed
	// Denied: a deny ACL matches.
	Denied
)

func (d Decision) String() string {
	return [...]string{NoMatch: "no matching ACL", Allowed: "allowed", Denied: "denied by an ACL"}[d]
}

// ACLIndex is an immutable set of ACLs arranged for matching: a check looks
// up the resource's literal name, the wildcard, and each prefix length that
// some prefixed ACL of the type uses, then the request's principal and
// User:* within each; it never scans the ACLs. Stores build a new index
// when their ACLs change and hand it out whole, so checks take no lock.
type ACLIndex struct {
	byName map[nameKey]map[Principal][]rule
	// prefixLens are the distinct lengths of prefixed names, per resource
	// type, ascending.
	prefixLens map[ResourceType][]int
	acls       []ACL
}

type nameKey struct {
	rt   ResourceType
	pt   PatternType
	name string
}

type rule struct {
	op   Operation
	perm Permission
}

// NewACLIndex indexes acls (which should be valid; duplicates are kept
// once).
func NewACLIndex(acls []ACL) *ACLIndex {
	x := &ACLIndex{byName: map[nameKey]map[Principal][]rule{}, prefixLens: map[ResourceType][]int{}}
	seen := map[ACL]bool{}
	for _, a := range acls {
		if seen[a] {
			continue
		}
		seen[a] = true
		x.acls = append(x.acls, a)
		k := nameKey{a.ResourceType, a.PatternType, a.Name}
		if x.byName[k] == nil {
			x.byName[k] = map[Principal][]rule{}
		}
		x.byName[k][a.Principal] = append(x.byName[k][a.Principal], rule{a.Operation, a.Permission})
		if a.PatternType == PatternPrefixed && !slices.Contains(x.prefixLens[a.ResourceType], len(a.Name)) {
			x.prefixLens[a.ResourceType] = append(x.prefixLens[a.ResourceType], len(a.Name))
		}
	}
	for _, l := range x.prefixLens {
		slices.Sort(l)
	}
	return x
}

// ACLs are the indexed ACLs, in the order given.
func (x *ACLIndex) ACLs() []ACL { return slices.Clone(x.acls) }

// Len is the number of ACLs.
func (x *ACLIndex) Len() int { return len(x.acls) }

// Decide is what the ACLs say about principal p doing op on r. Deny wins.
// As in Kafka:
//   - an ACL for OpAll matches every operation, allow and deny alike;
//   - an allow ACL for read, write, delete or alter also allows describe
//     (whoever may use a resource may see it); a deny ACL implies nothing,
//     so denying read does not deny describe;
//   - the literal name "*" matches every name, the principal User:* every
//     principal.
func (x *ACLIndex) Decide(p Principal, op Operation, r Resource) Decision {
	d := NoMatch
	visit := func(k nameKey) bool {
		byP := x.byName[k]
		for _, who := range [2]Principal{p, AnyUser} {
			for _, ru := range byP[who] {
				switch {
				case ru.perm == Deny && (ru.op == op || ru.op == OpAll):
					return false
				case ru.perm == Allow && allowCovers(ru.op, op):
					d = Allowed
				}
			}
			if p == AnyUser {
				break
			}
		}
		return true
	}
	if !visit(nameKey{r.Type, PatternLiteral, r.Name}) || !visit(nameKey{r.Type, PatternLiteral, Wildcard}) {
		return Denied
	}
	for _, l := range x.prefixLens[r.Type] {
		if l > len(r.Name) {
			break
		}
		if !visit(nameKey{r.Type, PatternPrefixed, r.Name[:l]}) {
			return Denied
		}
	}
	return d
}

// allowCovers reports whether an allow ACL for granted allows requested.
func allowCovers(granted, requested Operation) bool {
	switch {
	case granted == requested, granted == OpAll:
		return true
	case requested == OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	}
	return false
}
