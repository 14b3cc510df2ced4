package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"
)

// ErrWrongProtocol: the address answers another protocol than logd's API
// (gRPC): it is a node's HTTP or Kafka listener, say. Calls do not retry
// it. The error is a *WrongProtocolError.
var ErrWrongProtocol = errors.New("client: not a logd API address")

// WrongProtocolError reports an address that closed a gRPC connection and
// then answered Protocol ("HTTP/1.1" or "Kafka") when asked in it.
type WrongProtocolError struct {
	Addr     string
	Protocol string
}

func (e *WrongProtocolError) Error() string {
	return fmt.Sprintf("client: %s answers %s, not logd's gRPC API: it is another listener of the node (its API is the node's --addr)", e.Addr, e.Protocol)
}

// Is makes errors.Is(err, ErrWrongProtocol) true.
func (e *WrongProtocolError) Is(target error) bool { return target == ErrWrongProtocol }

// probeTimeout bounds probeProtocol.
const probeTimeout = time.Second

// probeProtocol asks addr, which closed a plaintext gRPC connection before
// answering, what it serves: "HTTP/1.1", "Kafka", or "" when it answers
// neither (a TLS listener, most often). One request does for both: a Kafka
// ApiVersions v0 request whose client id ends in a blank line, so an HTTP
// server reads it as a malformed request line and answers 400.
func probeProtocol(ctx context.Context, addr string) string {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return ""
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	const correlationID = 0x6c6f6764 // "logd"
	clientID := "logd-probe\r\n\r\n"
	req := binary.BigEndian.AppendUint16(nil, 18) // ApiVersions
	req = binary.BigEndian.AppendUint16(req, 0)
	req = binary.BigEndian.AppendUint32(req, correlationID)
	req = binary.BigEndian.AppendUint16(req, uint16(len(clientID)))
	req = append(binary.BigEndian.AppendUint32(nil, uint32(len(req)+len(clientID))), append(req, clientID...)...)
	if _, err := conn.Write(req); err != nil {
		return ""
	}
	var got [8]byte
	n, _ := readAtLeast(conn, got[:])
	switch {
	case bytes.HasPrefix(got[:n], []byte("HTTP/")):
		return "HTTP/1.1"
	case n == 8 && binary.BigEndian.Uint32(got[4:]) == correlationID:
		return "Kafka"
	}
	return ""
}

// readAtLeast reads until b is full, or the connection ends or times out.
func readAtLeast(conn net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := conn.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
