package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	xscram "github.com/xdg-go/scram"

	"github.com/logd/logd/auth"
)

// paddedAPIVersions is an ApiVersions v0 request frame padded with pad
// bytes of trailing zeros (tolerated, as Kafka does): a small request in a
// frame of any size.
func paddedAPIVersions(corr int32, pad int) []byte {
	f := frame(kmsg.NewPtrApiVersionsRequest(), corr)
	f = append(f, make([]byte, pad)...)
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	return f
}

// loginSCRAM logs c in as alice with SaslHandshake v1 and
// SaslAuthenticate v1.
func loginSCRAM(t *testing.T, c *rawConn) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "SCRAM-SHA-256"
	c.send(frame(hs, 1))
	hsResp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if c.recv(hsResp); hsResp.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: error %d", hsResp.ErrorCode)
	}
	client, err := xscram.SHA256.NewClient("alice", "s3cret", "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	msg, _ := conv.Step("")
	for corr := int32(2); !conv.Done(); corr++ {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, []byte(msg)
		c.send(frame(req, corr))
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		if c.recv(resp); resp.ErrorCode != 0 {
			t.Fatalf("SaslAuthenticate: error %d", resp.ErrorCode)
		}
		if msg, err = conv.Step(string(resp.SASLAuthBytes)); err != nil {
			t.Fatal(err)
		}
	}
}

// Before a connection has logged in (--auth required), a frame above the
// pre-authentication limit closes it as soon as its size is read: the
// listener buffers none of it. Small frames (ApiVersions, SASL) are
// served, and once logged in the listener's full limit applies.
func TestKafkaPreAuthFrameLimit(t *testing.T) {
	ss := startSecure(t, secureOpts{mode: auth.AuthRequired})
	const over = DefaultMaxPreAuthRequestBytes + 1
	t.Run("announced, never sent", func(t *testing.T) {
		c := dialRaw(t, ss.s)
		c.send(binary.BigEndian.AppendUint32(nil, 99<<20))
		c.expectClosed()
	})
	t.Run("sent", func(t *testing.T) {
		c := dialRaw(t, ss.s)
		f := paddedAPIVersions(1, over)
		go c.nc.Write(f) // the server may close before it is all sent
		// Closed with bytes unread, the socket may be reset instead.
		if _, err := c.br.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("connection not closed by the server: %v", err)
		}
	})
	t.Run("below the limit", func(t *testing.T) {
		c := dialRaw(t, ss.s)
		c.send(paddedAPIVersions(1, DefaultMaxPreAuthRequestBytes/2))
		var av kmsg.ApiVersionsResponse
		if corr := c.recv(&av); corr != 1 || av.ErrorCode != 0 {
			t.Fatalf("ApiVersions: corr %d, error %d", corr, av.ErrorCode)
		}
	})
	t.Run("after login", func(t *testing.T) {
		c := dialRaw(t, ss.s)
		loginSCRAM(t, c)
		c.send(paddedAPIVersions(9, 2<<20))
		var av kmsg.ApiVersionsResponse
		if corr := c.recv(&av); corr != 9 || av.ErrorCode != 0 {
			t.Fatalf("ApiVersions after login: corr %d, error %d", corr, av.ErrorCode)
		}
	})
}

// The legacy SaslHandshake v0 exchange sends bare tokens: they are held to
// the pre-authentication limit too, even on an admitted connection.
func TestKafkaLegacySASLTokenLimit(t *testing.T) {
	ss := startSecure(t, secureOpts{mode: auth.AuthOptional})
	c := dialRaw(t, ss.s)
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = 0, "SCRAM-SHA-256"
	c.send(frame(req, 1))
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if c.recv(resp); resp.ErrorCode != 0 {
		t.Fatalf("handshake v0: error %d", resp.ErrorCode)
	}
	c.send(binary.BigEndian.AppendUint32(nil, DefaultMaxPreAuthRequestBytes+1))
	c.expectClosed()
}

// A frame's announced size costs nothing until its bytes arrive.
func TestReadFrameGrowsAsBytesArrive(t *testing.T) {
	const announced = 64 << 20
	in := append(binary.BigEndian.AppendUint32(nil, announced), strings.Repeat("x", 1000)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(bytes.NewReader(in), 100<<20)
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("a truncated frame: %v, want io.ErrUnexpectedEOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Fatalf("reading 1000 bytes of a frame announcing %d allocated %d bytes", announced, grew)
	}
	body, err := readFrame(bytes.NewReader(paddedAPIVersions(3, 300<<10)), 1<<20)
	if err != nil || len(body) != 300<<10+len(frame(kmsg.NewPtrApiVersionsRequest(), 3))-4 || cap(body) != len(body) {
		t.Fatalf("a whole frame: %d bytes (cap %d), %v", len(body), cap(body), err)
	}
}
