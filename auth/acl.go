package auth

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ResourceType is what an ACL protects.
type ResourceType uint8

const (
	ResourceTopic ResourceType = 1 + iota
	ResourceGroup
	ResourceCluster
	// ResourceTransactionalID is a Kafka transactional id: Write lets a
	// producer use it (InitProducerId, AddPartitionsToTxn, EndTxn, ...),
	// Describe find its coordinator.
	ResourceTransactionalID
)

// Operation is what a request does to a resource.
type Operation uint8

const (
	OpRead Operation = 1 + iota
	OpWrite
	OpCreate
	OpDelete
	OpAlter
	OpDescribe
	// OpAll in an ACL covers every operation; a request never asks for it.
	OpAll
)

// PatternType says how an ACL's name matches a resource's.
type PatternType uint8

const (
	// PatternLiteral matches the name exactly; the literal "*" matches every
	// name of the resource type.
	PatternLiteral PatternType = 1 + iota
	// PatternPrefixed matches every name that starts with the ACL's name.
	PatternPrefixed
)

// Permission is an ACL's verdict.
type Permission uint8

const (
	Allow Permission = 1 + iota
	Deny
)

const (
	// Wildcard is the literal name that matches every resource of a type.
	Wildcard = "*"
	// ClusterName is the name of the one cluster resource, as Kafka clients
	// send it in CreateAcls and DescribeAcls.
	ClusterName = "kafka-cluster"
	// maxResourceName covers a topic name (249) and a Kafka group id.
	maxResourceName = 255
)

var (
	resourceTypeNames = []string{ResourceTopic: "topic", ResourceGroup: "group", ResourceCluster: "cluster",
		ResourceTransactionalID: "transactional-id"}
	operationNames = []string{OpRead: "read", OpWrite: "write", OpCreate: "create", OpDelete: "delete",
		OpAlter: "alter", OpDescribe: "describe", OpAll: "all"}
	patternTypeNames = []string{PatternLiteral: "literal", PatternPrefixed: "prefixed"}
	permissionNames  = []string{Allow: "allow", Deny: "deny"}
)

func enumName(names []string, v uint8, kind string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, v)
}

func parseEnum(names []string, s, kind string) (uint8, error) {
	for i, n := range names {
		if n != "" && strings.EqualFold(s, n) {
			return uint8(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %s %q: want one of %s", ErrInvalid, kind, s, strings.Join(nonEmpty(names), ", "))
}

func nonEmpty(names []string) []string {
	var out []string
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

func (t ResourceType) String() string { return enumName(resourceTypeNames, uint8(t), "ResourceType") }
func (o Operation) String() string    { return enumName(operationNames, uint8(o), "Operation") }
func (p PatternType) String() string  { return enumName(patternTypeNames, uint8(p), "PatternType") }
func (p Permission) String() string   { return enumName(permissionNames, uint8(p), "Permission") }

// ParseResourceType reads topic|group|cluster|transactional-id (any case).
func ParseResourceType(s string) (ResourceType, error) {
	v, err := parseEnum(resourceTypeNames, s, "resource type")
	return ResourceType(v), err
}

// ParseOperation reads read|write|create|delete|alter|describe|all (any case).
func ParseOperation(s string) (Operation, error) {
	v, err := parseEnum(operationNames, s, "operation")
	return Operation(v), err
}

// ParsePatternType reads literal|prefixed (any case).
func ParsePatternType(s string) (PatternType, error) {
	v, err := parseEnum(patternTypeNames, s, "pattern type")
	return PatternType(v), err
}

// ParsePermission reads allow|deny (any case).
func ParsePermission(s string) (Permission, error) {
	v, err := parseEnum(permissionNames, s, "permission")
	return Permission(v), err
}

// supportedOperations are the operations that mean something on each
// resource type, as in Kafka (AclEntry.supportedOperations, without the
// *_CONFIGS, CLUSTER_ACTION and IDEMPOTENT_WRITE operations logd does not
// have): an ACL granting another is refused as a mistake.
var supportedOperations = map[ResourceType][]Operation{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe, OpAll},
	ResourceGroup:           {OpRead, OpDelete, OpDescribe, OpAll},
	ResourceCluster:         {OpCreate, OpAlter, OpDescribe, OpAll},
	ResourceTransactionalID: {OpWrite, OpDescribe, OpAll},
}

// Resource is one thing a request touches.
type Resource struct {
	Type ResourceType
	Name string
}

// Topic, Group and Cluster name resources.
func Topic(name string) Resource { return Resource{Type: ResourceTopic, Name: name} }
func Group(name string) Resource { return Resource{Type: ResourceGroup, Name: name} }
func Cluster() Resource          { return Resource{Type: ResourceCluster, Name: ClusterName} }

// TransactionalID is a Kafka transactional id as a resource.
func TransactionalID(id string) Resource { return Resource{Type: ResourceTransactionalID, Name: id} }

func (r Resource) String() string {
	if r.Type == ResourceCluster {
		return "the cluster"
	}
	return fmt.Sprintf("%s %q", r.Type, r.Name)
}

// ACL is one rule: Principal is (Permission) allowed or denied Operation on
// the resources of ResourceType whose name matches Name by PatternType.
type ACL struct {
	Principal    Principal
	Permission   Permission
	Operation    Operation
	ResourceType ResourceType
	PatternType  PatternType
	Name         string
}

func (a ACL) String() string {
	name := fmt.Sprintf("%s %q", a.ResourceType, a.Name)
	switch {
	case a.ResourceType == ResourceCluster:
		name = "the cluster"
	case a.PatternType == PatternPrefixed:
		name = fmt.Sprintf("%ss prefixed %q", a.ResourceType, a.Name)
	case a.Name == Wildcard:
		name = fmt.Sprintf("every %s", a.ResourceType)
	}
	return fmt.Sprintf("%s %s %s on %s", a.Permission, a.Principal, a.Operation, name)
}

// Validate checks an ACL before it is stored; the error names the bad part.
func (a ACL) Validate() error {
	if _, err := ParsePrincipal(a.Principal.String()); err != nil {
		return err
	}
	if a.Permission != Allow && a.Permission != Deny {
		return fmt.Errorf("%w: ACL permission %v", ErrInvalid, a.Permission)
	}
	ops, ok := supportedOperations[a.ResourceType]
	if !ok {
		return fmt.Errorf("%w: ACL resource type %v", ErrInvalid, a.ResourceType)
	}
	if !slices.Contains(ops, a.Operation) {
		return fmt.Errorf("%w: operation %v does not apply to a %v; it takes %s", ErrInvalid, a.Operation, a.ResourceType, opList(ops))
	}
	return a.validateName()
}

func (a ACL) validateName() error {
	switch {
	case a.PatternType != PatternLiteral && a.PatternType != PatternPrefixed:
		return fmt.Errorf("%w: ACL pattern type %v", ErrInvalid, a.PatternType)
	case a.ResourceType == ResourceCluster && (a.PatternType != PatternLiteral || a.Name != ClusterName):
		return fmt.Errorf("%w: a cluster ACL is literal and named %q, not %v %q", ErrInvalid, ClusterName, a.PatternType, a.Name)
	case a.PatternType == PatternPrefixed && a.Name == Wildcard:
		return fmt.Errorf("%w: prefix %q: use the literal %q for every %v", ErrInvalid, Wildcard, Wildcard, a.ResourceType)
	}
	if err := validateResourceName(a.Name); err != nil {
		return fmt.Errorf("%w: %v name %q: %v", ErrInvalid, a.ResourceType, a.Name, err)
	}
	return nil
}

// validateResourceName is deliberately loose: the rules for a topic name
// live with topics, and an ACL on a name no topic can take is harmless.
func validateResourceName(n string) error {
	switch {
	case n == "":
		return fmt.Errorf("empty")
	case len(n) > maxResourceName:
		return fmt.Errorf("%d bytes, at most %d", len(n), maxResourceName)
	case !utf8.ValidString(n):
		return fmt.Errorf("not valid UTF-8")
	case strings.ContainsFunc(n, unicode.IsControl):
		return fmt.Errorf("contains a control character")
	}
	return nil
}

func opList(ops []Operation) string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = o.String()
	}
	return strings.Join(s, ", ")
}
