package kafka

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// The mapping between Kafka's ACL enumerations and package auth's, shared
// by CreateAcls, DescribeAcls and DeleteAcls. logd has ACLs on topics,
// groups and the cluster, literal and prefixed names, seven operations
// and User principals; it has no host ACLs, so the host is always "*".

// errACL is a Kafka ACL or filter logd cannot express; it maps to
// INVALID_REQUEST with its message.
var errACL = errors.New("kafka acl")

func aclErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errACL}, args...)...)
}

var aclResourceTypes = map[kmsg.ACLResourceType]auth.ResourceType{
	kmsg.ACLResourceTypeTopic:           auth.ResourceTopic,
	kmsg.ACLResourceTypeGroup:           auth.ResourceGroup,
	kmsg.ACLResourceTypeCluster:         auth.ResourceCluster,
	kmsg.ACLResourceTypeTransactionalId: auth.ResourceTransactionalID,
}

var aclOperations = map[kmsg.ACLOperation]auth.Operation{
	kmsg.ACLOperationRead:     auth.OpRead,
	kmsg.ACLOperationWrite:    auth.OpWrite,
	kmsg.ACLOperationCreate:   auth.OpCreate,
	kmsg.ACLOperationDelete:   auth.OpDelete,
	kmsg.ACLOperationAlter:    auth.OpAlter,
	kmsg.ACLOperationDescribe: auth.OpDescribe,
	kmsg.ACLOperationAll:      auth.OpAll,
}

var aclPatterns = map[kmsg.ACLResourcePatternType]auth.PatternType{
	kmsg.ACLResourcePatternTypeLiteral:  auth.PatternLiteral,
	kmsg.ACLResourcePatternTypePrefixed: auth.PatternPrefixed,
}

var aclPermissions = map[kmsg.ACLPermissionType]auth.Permission{
	kmsg.ACLPermissionTypeAllow: auth.Allow,
	kmsg.ACLPermissionTypeDeny:  auth.Deny,
}

// lookupACL finds k in m; any (when allowed, in filters) is the zero
// value, which an auth.ACLFilter reads as "every".
func lookupACL[K ~int8, V any](m map[K]V, k K, anyOK bool, what string) (V, error) {
	var zero V
	if anyOK && k == 1 { // every Kafka ACL enumeration has ANY = 1
		return zero, nil
	}
	if v, ok := m[k]; ok {
		return v, nil
	}
	return zero, aclErrorf("%s %v is not supported by logd", what, k)
}

// aclHost checks the host of an ACL or filter: logd has no host ACLs,
// so only "*" (and, in a filter, no host) is accepted.
func aclHost(host *string, filter bool) error {
	if (host == nil && filter) || (host != nil && *host == "*") {
		return nil
	}
	h := "null"
	if host != nil {
		h = fmt.Sprintf("%q", *host)
	}
	return aclErrorf("host %s: logd has no host ACLs, use \"*\"", h)
}

// kafkaACL is the auth.ACL of one CreateAcls creation.
func kafkaACL(c kmsg.CreateACLsRequestCreation) (auth.ACL, error) {
	var a auth.ACL
	var err error
	if a.ResourceType, err = lookupACL(aclResourceTypes, c.ResourceType, false, "resource type"); err != nil {
		return a, err
	}
	if a.PatternType, err = lookupACL(aclPatterns, c.ResourcePatternType, false, "pattern type"); err != nil {
		return a, err
	}
	if a.Operation, err = lookupACL(aclOperations, c.Operation, false, "operation"); err != nil {
		return a, err
	}
	if a.Permission, err = lookupACL(aclPermissions, c.PermissionType, false, "permission"); err != nil {
		return a, err
	}
	if err = aclHost(&c.Host, false); err != nil {
		return a, err
	}
	if a.Principal, err = auth.ParsePrincipal(c.Principal); err != nil {
		return a, aclErrorf("%v", err)
	}
	a.Name = c.ResourceName
	if err := a.Validate(); err != nil {
		return a, aclErrorf("%v", err)
	}
	return a, nil
}

// aclFilter is a DescribeAcls or DeleteAcls filter: the auth.ACLFilter
// to ask the core with, and, for pattern MATCH, the resource name whose
// matching ACLs (literal, the wildcard, prefixes) are kept by keep.
type aclFilter struct {
	f     auth.ACLFilter
	match *string
}

func (f aclFilter) keep(a auth.ACL) bool {
	if f.match == nil {
		return true
	}
	n := *f.match
	switch a.PatternType {
	case auth.PatternLiteral:
		return a.Name == n || a.Name == auth.Wildcard
	case auth.PatternPrefixed:
		return strings.HasPrefix(n, a.Name)
	}
	return false
}

// kafkaFilter reads a filter's fields (DescribeAcls' request and a
// DeleteAcls filter have the same ones).
func kafkaFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) (aclFilter, error) {
	var out aclFilter
	f := &out.f
	var err error
	if f.ResourceType, err = lookupACL(aclResourceTypes, rt, true, "resource type"); err != nil {
		return out, err
	}
	if f.Operation, err = lookupACL(aclOperations, op, true, "operation"); err != nil {
		return out, err
	}
	if f.Permission, err = lookupACL(aclPermissions, perm, true, "permission"); err != nil {
		return out, err
	}
	if err = aclHost(host, true); err != nil {
		return out, err
	}
	if principal != nil {
		if f.Principal, err = auth.ParsePrincipal(*principal); err != nil {
			return out, aclErrorf("%v", err)
		}
	}
	switch {
	case pt == kmsg.ACLResourcePatternTypeMatch:
		// Every ACL that applies to the named resource: ask for all
		// of them and keep those that match the name.
		out.match = name
	case name != nil:
		f.Name = *name
		fallthrough
	default:
		if f.PatternType, err = lookupACL(aclPatterns, pt, true, "pattern type"); err != nil {
			return out, err
		}
	}
	return out, nil
}

// aclCode maps an error of an ACL API: a bad ACL or filter is
// INVALID_REQUEST, a node that does not lead the cluster metadata
// NOT_CONTROLLER, a refusal CLUSTER_AUTHORIZATION_FAILED (the ACLs are
// the cluster's).
func aclCode(err error) int16 {
	var notLeader *NotLeaderError
	switch {
	case errors.Is(err, errACL):
		return kerr.InvalidRequest.Code
	case errors.As(err, &notLeader):
		return kerr.NotController.Code
	}
	return deniedCode(err, "cluster")
}

// kafkaEnum finds the Kafka value of v in m (the maps are one to one).
func kafkaEnum[K comparable, V comparable](m map[K]V, v V) K {
	for k, mv := range m {
		if mv == v {
			return k
		}
	}
	var zero K
	return zero
}
