package main

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaDial opens a connection to a Kafka listener and reports whether it
// is served: an ApiVersions request is answered (true), or the listener
// closed the connection (false).
func kafkaDial(t *testing.T, addr string) (net.Conn, bool) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	body := []byte{0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff} // ApiVersions v0, corr 1, null client id
	if _, err := nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
		return nc, false // reset: closed on arrival
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the listener neither answered nor closed the connection: %v", err)
		}
		return nc, false
	}
	resp := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, resp); err != nil {
		t.Fatalf("reading the ApiVersions answer: %v", err)
	}
	var av kmsg.ApiVersionsResponse
	if err := av.ReadFrom(resp[4:]); err != nil || av.ErrorCode != 0 {
		t.Fatalf("ApiVersions answer: error code %d, %v", av.ErrorCode, err)
	}
	return nc, true
}

// --max-connections bounds the Kafka listener too: with N open, the next
// connection is closed on arrival, and one is served again once one of
// the N closes.
func TestServeKafkaMaxConnections(t *testing.T) {
	const maxConns = 3
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "",
		"--kafka-addr", "127.0.0.1:0", "--max-connections", "3")
	addr := kafkaListener(t, n)
	var open []net.Conn
	for i := 0; i < maxConns; i++ {
		nc, ok := kafkaDial(t, addr)
		if !ok {
			t.Fatalf("connection %d of %d closed", i+1, maxConns)
		}
		open = append(open, nc)
	}
	if _, ok := kafkaDial(t, addr); ok {
		t.Fatalf("connection %d served with --max-connections %d", maxConns+1, maxConns)
	}
	open[0].Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		nc, ok := kafkaDial(t, addr)
		if ok {
			break
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no connection served 20 s after one of the %d closed", maxConns)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
