package kafka

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn is a hand-driven client connection.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, s *Server) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// frame encodes req as a request frame with correlation id corr.
func frame(req kmsg.Request, corr int32) []byte {
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "test"...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func (c *rawConn) send(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// recv reads one response frame into resp and returns its correlation id.
func (c *rawConn) recv(resp kmsg.Response) int32 {
	c.t.Helper()
	body, err := readFrame(c.br, 1<<30)
	if err != nil {
		c.t.Fatalf("reading a response: %v", err)
	}
	corr := int32(binary.BigEndian.Uint32(body))
	body = body[4:]
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decoding %s response: %v", kmsg.NameForKey(resp.Key()), err)
	}
	return corr
}

// call sends req with correlation id corr and returns its response.
func (c *rawConn) call(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	c.send(frame(req, corr))
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	c.recv(resp)
	return resp
}

// expectClosed checks that the server closed the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	if _, err := c.br.ReadByte(); !errors.Is(err, io.EOF) {
		c.t.Fatalf("connection not closed by the server: %v", err)
	}
}

func metadataV(v int16) *kmsg.MetadataRequest {
	r := kmsg.NewPtrMetadataRequest()
	r.Version = v
	return r
}

func TestMalformedFramesCloseOnlyThatConnection(t *testing.T) {
	s := startServer(t, newFakeCore(), Config{MaxRequestBytes: 1024})
	header := func(key, version int16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		return append(binary.BigEndian.AppendUint32(b, 7), 0xff, 0xff) // null client id
	}
	withSize := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	cases := map[string][]byte{
		"over the size limit": binary.BigEndian.AppendUint32(nil, 1025),
		"negative size":       binary.BigEndian.AppendUint32(nil, 0xffffffff),
		"truncated header":    withSize([]byte{0, 3, 0}),
		"unknown api key":     withSize(header(999, 0)),
		"version not served":  withSize(header(3, 99)),
		"api not served":      withSize(header(4, 0)), // LeaderAndISR
		"truncated body":      withSize(append(header(3, 1), 0, 0, 0, 9)),
		"absurd array count":  withSize(append(header(3, 1), 0x7f, 0xff, 0xff, 0xff)),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, s)
			c.send(b)
			c.expectClosed()
		})
	}
	// The server still serves.
	c := dialRaw(t, s)
	c.send(frame(metadataV(1), 1))
	var resp kmsg.MetadataResponse
	resp.Version = 1
	if corr := c.recv(&resp); corr != 1 || len(resp.Brokers) != 1 {
		t.Fatalf("after malformed frames: corr %d, brokers %v", corr, resp.Brokers)
	}
}

func TestAPIVersionsAtUnknownVersionAnswersV0(t *testing.T) {
	s := startServer(t, newFakeCore(), Config{})
	c := dialRaw(t, s)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 42
	body := binary.BigEndian.AppendUint16(nil, apiVersionsKey)
	body = binary.BigEndian.AppendUint16(body, 42)
	body = binary.BigEndian.AppendUint32(body, 5)
	body = append(body, 0xff, 0xff, 1, 2, 3) // null client id, a body this version may have
	c.send(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
	var resp kmsg.ApiVersionsResponse
	if corr := c.recv(&resp); corr != 5 {
		t.Fatalf("correlation id %d", corr)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != len(apis) {
		t.Fatalf("error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	core := newFakeCore()
	s := startServer(t, core, Config{})
	if _, err := core.CreateTopic(testCtx(t), "", topicConfig("t", 1)); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, s)
	// A fetch that long-polls for 300ms, then a metadata request that is
	// ready at once: the metadata answer must come second.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, 300, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	var all []byte
	all = append(all, frame(fetch, 10)...)
	for i := int32(11); i < 30; i++ {
		all = append(all, frame(metadataV(9), i)...)
	}
	c.send(all)
	fr := kmsg.NewPtrFetchResponse()
	fr.Version = 11
	if corr := c.recv(fr); corr != 10 {
		t.Fatalf("first answer has correlation id %d, want the fetch's 10", corr)
	}
	for i := int32(11); i < 30; i++ {
		mr := metadataV(9).ResponseKind()
		if corr := c.recv(mr); corr != i {
			t.Fatalf("answer %d has correlation id %d", i, corr)
		}
	}
}

func TestFetchSessionsAreRefused(t *testing.T) {
	s := startServer(t, newFakeCore(), Config{})
	c := dialRaw(t, s)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.SessionID, fetch.SessionEpoch = 12, 77, 1
	c.send(frame(fetch, 1))
	fr := kmsg.NewPtrFetchResponse()
	fr.Version = 12
	c.recv(fr)
	if fr.ErrorCode != kerr.FetchSessionIDNotFound.Code || fr.SessionID != 0 {
		t.Fatalf("error %d, session %d", fr.ErrorCode, fr.SessionID)
	}
}

func TestAcksZeroProduceIsNotAnsweredAndAFailureCloses(t *testing.T) {
	core := newFakeCore()
	core.produce = func(r ProduceRequest) error {
		if r.Topic == "bad" {
			return ErrDiskFull
		}
		return nil
	}
	s := startServer(t, core, Config{})
	if _, err := core.CreateTopic(testCtx(t), "", topicConfig("t", 1)); err != nil {
		t.Fatal(err)
	}
	produce := func(topic string) *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 7, 0, 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = testBatch(t, "hello")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	c := dialRaw(t, s)
	c.send(append(frame(produce("t"), 1), frame(metadataV(1), 2)...))
	if corr := c.recv(metadataV(1).ResponseKind()); corr != 2 {
		t.Fatalf("first answer has correlation id %d, want the metadata's 2 (acks=0 is not answered)", corr)
	}
	c.send(frame(produce("bad"), 3))
	c.expectClosed()
}

func TestCloseEndsLongPollsAndConnections(t *testing.T) {
	core := newFakeCore()
	s, err := Listen("127.0.0.1:0", Config{Core: core, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.CreateTopic(testCtx(t), "", topicConfig("t", 1)); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, s)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes = 11, 25000, 1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	c.send(frame(fetch, 1))
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return while a fetch long-polled")
	}
	c.expectClosed()
}
