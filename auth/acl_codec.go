package auth

import (
	"encoding/binary"
	"fmt"
)

// A stored ACL, version 1:
//
//	offset size field
//	     0    1 version        1
//	     1    1 permission     1 allow, 2 deny
//	     2    1 operation      1 read, 2 write, 3 create, 4 delete, 5 alter, 6 describe, 7 all
//	     3    1 resource type  1 topic, 2 group, 3 cluster
//	     4    1 pattern type   1 literal, 2 prefixed
//	     5    v principal      uvarint length, then "User:NAME"
//	     …    v name           uvarint length, then the resource name or prefix
//
// Nothing follows the name. The decoded ACL must pass Validate. The
// encoding of an ACL is unique, so the core may use it as the ACL's key in
// the metadata: adding an ACL twice stores it once.
const aclVersion = 1

// MarshalBinary encodes a valid ACL for storage (version 1).
func (a ACL) MarshalBinary() ([]byte, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	p := a.Principal.String()
	b := make([]byte, 0, 5+2*binary.MaxVarintLen16+len(p)+len(a.Name))
	b = append(b, aclVersion, byte(a.Permission), byte(a.Operation), byte(a.ResourceType), byte(a.PatternType))
	b = binary.AppendUvarint(b, uint64(len(p)))
	b = append(b, p...)
	b = binary.AppendUvarint(b, uint64(len(a.Name)))
	return append(b, a.Name...), nil
}

// DecodeACL decodes a stored ACL; anything but a valid version 1 ACL is
// ErrCorrupt.
func DecodeACL(b []byte) (ACL, error) {
	if len(b) < 5 {
		return ACL{}, fmt.Errorf("%w: ACL of %d bytes", ErrCorrupt, len(b))
	}
	if b[0] != aclVersion {
		return ACL{}, fmt.Errorf("%w: ACL version %d, this logd reads %d", ErrCorrupt, b[0], aclVersion)
	}
	a := ACL{Permission: Permission(b[1]), Operation: Operation(b[2]), ResourceType: ResourceType(b[3]), PatternType: PatternType(b[4])}
	principal, rest, err := readString(b[5:], "principal")
	if err != nil {
		return ACL{}, err
	}
	name, rest, err := readString(rest, "name")
	if err != nil {
		return ACL{}, err
	}
	if len(rest) != 0 {
		return ACL{}, fmt.Errorf("%w: %d bytes after the ACL", ErrCorrupt, len(rest))
	}
	if a.Principal, err = ParsePrincipal(principal); err != nil {
		return ACL{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	a.Name = name
	if err := a.Validate(); err != nil {
		return ACL{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return a, nil
}

// readString reads a uvarint length and that many bytes; lengths are
// bounded before any allocation.
func readString(b []byte, what string) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	// An overlong varint is refused too, so each ACL has one encoding.
	if k <= 0 || k != len(binary.AppendUvarint(nil, n)) || n > maxResourceName+16 || uint64(len(b)-k) < n {
		return "", nil, fmt.Errorf("%w: ACL %s length", ErrCorrupt, what)
	}
	return string(b[k : k+int(n)]), b[k+int(n):], nil
}
