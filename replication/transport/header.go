package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The connection header, written by the dialer before any Raft byte:
//
//	offset size field
//	     0    4 magic      "LDRG"
//	     4    1 version    1
//	     5    2 id length  big-endian, 1..MaxGroupIDLen
//	     7    … group id
//
// The acceptor answers with one status byte, then the connection carries
// Raft's RPCs for that group:
//
//	0 ok, 1 unknown group, 2 group busy (accept queue full), 3 bad header
const (
	headerMagic   = "LDRG"
	headerVersion = 1
	headerFixed   = 7

	// MaxGroupIDLen bounds a group id: a topic name (up to 249 bytes) plus a
	// prefix and a partition number fit.
	MaxGroupIDLen = 512
)

const (
	statusOK           byte = 0
	statusUnknownGroup byte = 1
	statusBusy         byte = 2
	statusBadHeader    byte = 3
)

// Sentinel errors. Dial errors wrap one of them.
var (
	ErrClosed       = errors.New("transport: closed")
	ErrUnknownGroup = errors.New("transport: unknown group")
	ErrBusy         = errors.New("transport: group accept queue full")
	ErrBadHeader    = errors.New("transport: bad connection header")
	ErrGroupExists  = errors.New("transport: group already registered")
	ErrInvalidGroup = errors.New("transport: invalid group id")
)

func validGroupID(id string) error {
	if len(id) == 0 || len(id) > MaxGroupIDLen {
		return fmt.Errorf("%w: %q: want 1..%d bytes", ErrInvalidGroup, id, MaxGroupIDLen)
	}
	return nil
}

func appendHeader(dst []byte, group string) []byte {
	dst = append(dst, headerMagic...)
	dst = append(dst, headerVersion)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(group)))
	return append(dst, group...)
}

// readHeader reads a connection header and returns its group id.
func readHeader(r io.Reader) (string, error) {
	var fixed [headerFixed]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadHeader, err)
	}
	if string(fixed[:4]) != headerMagic {
		return "", fmt.Errorf("%w: magic %q", ErrBadHeader, fixed[:4])
	}
	if fixed[4] != headerVersion {
		return "", fmt.Errorf("%w: version %d, want %d", ErrBadHeader, fixed[4], headerVersion)
	}
	n := int(binary.BigEndian.Uint16(fixed[5:]))
	if n == 0 || n > MaxGroupIDLen {
		return "", fmt.Errorf("%w: group id length %d", ErrBadHeader, n)
	}
	id := make([]byte, n)
	if _, err := io.ReadFull(r, id); err != nil {
		return "", fmt.Errorf("%w: group id: %v", ErrBadHeader, err)
	}
	return string(id), nil
}

func statusError(s byte, group string) error {
	switch s {
	case statusOK:
		return nil
	case statusUnknownGroup:
		return fmt.Errorf("%w %q on the remote node", ErrUnknownGroup, group)
	case statusBusy:
		return fmt.Errorf("%w: %q", ErrBusy, group)
	case statusBadHeader:
		return fmt.Errorf("%w: rejected by the remote node", ErrBadHeader)
	}
	return fmt.Errorf("%w: unknown status %d", ErrBadHeader, s)
}
