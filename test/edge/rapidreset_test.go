package edge

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	pb "github.com/logd/logd/proto/logd/v1"
)

// TestRapidReset speaks HTTP/2 directly: on one connection it opens 20,000
// streams, each a complete Fetch request long-polling for a minute, and
// resets each at once (the "rapid reset" attack, CVE-2023-44487). The server
// must stay up, keep serving a well-behaved client, and not keep a handler
// or memory per reset stream.
func TestRapidReset(t *testing.T) {
	const streams = 20_000
	s := startServer(t, 0)
	p := newProbe(t, s, "edge-probe")
	newProbe(t, s, "edge-idle") // never written: a fetch of it long-polls
	base := s.rss()

	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// Read and drop what the server sends (its settings go unacknowledged:
	// the test is over long before the server would mind).
	closed := make(chan error, 1)
	go func() {
		rf := http2.NewFramer(nil, conn)
		for {
			if _, err := rf.ReadFrame(); err != nil {
				closed <- err
				return
			}
		}
	}()

	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	msg, _ := proto.Marshal(&pb.FetchRequest{Topic: "edge-idle", Offset: 0, MaxWaitMs: 60_000})
	body := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	copy(body[5:], msg)
	start := time.Now()
	sent := 0
	for i := range streams {
		id := uint32(2*i + 1)
		hb.Reset()
		for _, f := range [][2]string{
			{":method", "POST"}, {":scheme", "http"}, {":path", "/logd.v1.Log/Fetch"}, {":authority", s.addr},
			{"content-type", "application/grpc"}, {"te", "trailers"},
		} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			break
		}
		if err := fr.WriteData(id, true, body); err != nil {
			break
		}
		if err := fr.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
			break
		}
		sent++
	}
	elapsed := time.Since(start)
	var connErr error
	select {
	case connErr = <-closed:
	case <-time.After(time.Second):
	}
	t.Logf("opened and reset %d streams in %s; connection: %v", sent, elapsed.Round(time.Millisecond), connErr)
	s.alive()
	p.check("after the rapid resets")
	s.checkRSS("after the rapid resets", base, 64<<20)
}
