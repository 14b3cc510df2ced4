package edge

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	pb "github.com/logd/logd/proto/logd/v1"
)

// rawCodec sends and receives message bytes as they are, so a test can put
// any bytes on the wire where a protobuf message belongs.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	switch b := v.(type) {
	case []byte:
		return b, nil
	case *[]byte:
		return *b, nil
	}
	return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*p = append((*p)[:0], data...)
	return nil
}

// rpcMethod is one method of the logd API.
type rpcMethod struct {
	path         string // "/logd.v1.Log/Produce"
	input        protoreflect.MessageType
	clientStream bool
	serverStream bool
}

// apiMethods lists every method of every logd service.
func apiMethods(t *testing.T) []rpcMethod {
	var out []rpcMethod
	svcs := pb.File_logd_v1_logd_proto.Services()
	for i := range svcs.Len() {
		svc := svcs.Get(i)
		for j := range svc.Methods().Len() {
			m := svc.Methods().Get(j)
			mt, err := protoregistry.GlobalTypes.FindMessageByName(m.Input().FullName())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rpcMethod{
				path:         fmt.Sprintf("/%s/%s", svc.FullName(), m.Name()),
				input:        mt,
				clientStream: m.IsStreamingClient(),
				serverStream: m.IsStreamingServer(),
			})
		}
	}
	return out
}

// call sends msg (raw bytes) to m on cc and returns the status of the
// first answer: the unary reply, or for a stream the first message or the
// stream's end. A stream still open with nothing to say after a short wait
// is a success (Subscribe waiting for records).
func call(cc *grpc.ClientConn, m rpcMethod, msg []byte, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if !m.clientStream && !m.serverStream {
		var reply []byte
		return cc.Invoke(ctx, m.path, msg, &reply, grpc.ForceCodec(rawCodec{}))
	}
	desc := &grpc.StreamDesc{StreamName: m.path, ClientStreams: m.clientStream, ServerStreams: m.serverStream}
	st, err := cc.NewStream(ctx, desc, m.path, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	if err := st.SendMsg(msg); err != nil {
		var reply []byte
		return st.RecvMsg(&reply) // the real status
	}
	st.CloseSend()
	var reply []byte
	err = st.RecvMsg(&reply)
	if status.Code(err) == codes.DeadlineExceeded {
		// Open until the deadline (the server's copy of it may fire
		// first): a Subscribe waiting for records.
		return nil
	}
	return err
}

// statusTally counts the statuses each method answered.
type statusTally map[string]map[codes.Code]int

func (s statusTally) add(path string, err error) {
	if s[path] == nil {
		s[path] = map[codes.Code]int{}
	}
	s[path][status.Code(err)]++
}

func (s statusTally) String() string {
	var b strings.Builder
	for _, path := range slices.Sorted(maps.Keys(s)) {
		fmt.Fprintf(&b, "\n  %-36s", path)
		for _, c := range slices.Sorted(maps.Keys(s[path])) {
			fmt.Fprintf(&b, " %s=%d", c, s[path][c])
		}
	}
	return b.String()
}

// acceptable reports whether err is a clear answer to msg, bad input for
// m: a logd status. UNKNOWN (a handler's raw error or panic), DATA_LOSS
// and INTERNAL are not (bytes that do not unmarshal are INVALID_ARGUMENT,
// not grpc-go's INTERNAL); nor is a unary call that does not answer in
// time, except those that wait or work by contract: Fetch long-polls; a
// valid JoinGroup waits for its group's join phase to end (an empty
// group's initial delay; members that earlier random joins left in the
// group, up to the rebalance timeout); and a CreateTopic or AlterTopic
// asking for many partitions creates each (files, fsyncs, a leader each),
// which on a loaded machine outlasts the probe's 2 s (CI saw an
// AlterTopic of "fuzz" to 66 partitions do so).
func acceptable(m rpcMethod, msg []byte, err error) bool {
	switch status.Code(err) {
	case codes.OK, codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.OutOfRange,
		codes.ResourceExhausted, codes.FailedPrecondition, codes.Unimplemented:
		return true
	case codes.DeadlineExceeded:
		return strings.HasSuffix(m.path, "/Fetch") || strings.HasSuffix(m.path, "/JoinGroup") ||
			asksPartitions(m, msg) > manyPartitions
	}
	return false
}

// manyPartitions: a create or alter asking for more may take longer than
// the probe waits.
const manyPartitions = 8

// asksPartitions returns the partitions field of a CreateTopic or
// AlterTopic request msg (0: another method, or msg does not decode).
func asksPartitions(m rpcMethod, msg []byte) int32 {
	if !strings.HasSuffix(m.path, "/CreateTopic") && !strings.HasSuffix(m.path, "/AlterTopic") {
		return 0
	}
	req := m.input.New().Interface()
	if proto.Unmarshal(msg, req) != nil {
		return 0
	}
	fd := req.ProtoReflect().Descriptor().Fields().ByName("partitions")
	if fd == nil || fd.Kind() != protoreflect.Int32Kind {
		return 0
	}
	return int32(req.ProtoReflect().Get(fd).Int())
}

// wireGarbage is structurally valid protobuf wire data with random field
// numbers and wire types: unknown fields, known fields with the wrong wire
// type, lengths that overrun, invalid UTF-8 in strings.
func wireGarbage(rng *rand.Rand) []byte {
	var b []byte
	for range 1 + rng.IntN(8) {
		num := protowire.Number(1 + rng.IntN(12))
		if rng.IntN(10) == 0 {
			num = protowire.Number(rng.Int32N(math.MaxInt32 >> 3))
		}
		switch rng.IntN(5) {
		case 0:
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, rng.Uint64())
		case 1:
			b = protowire.AppendTag(b, num, protowire.BytesType)
			v := make([]byte, rng.IntN(40))
			for i := range v {
				v[i] = byte(rng.IntN(256)) // often invalid UTF-8
			}
			b = protowire.AppendBytes(b, v)
		case 2:
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(rng.IntN(1<<20))) // a length past the end
		case 3:
			b = protowire.AppendTag(b, num, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, rng.Uint64())
		default:
			b = protowire.AppendTag(b, num, protowire.StartGroupType)
		}
	}
	return b
}

// Interesting values for random well-formed messages.
var (
	interestingInts = []int64{0, 1, 2, -1, 3, 7, 1 << 20, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64}
	// "fuzz" is a topic that exists (created by the test): random requests
	// reach past name validation. The probe's topic is never named.
	interestingStrings = []string{"", "fuzz", "fuzz", "missing", "../../etc", "a/b", "\x00", strings.Repeat("t", 250),
		strings.Repeat("g", 300), "émoji-✓", "group-1", "-1", "latest"}
)

// randomMessage fills a message of type mt with random, well-formed field
// values drawn mostly from the interesting ones.
func randomMessage(rng *rand.Rand, mt protoreflect.MessageType, depth int) proto.Message {
	m := mt.New()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if rng.IntN(3) == 0 {
			continue
		}
		n := 1
		if fd.IsList() {
			n = rng.IntN(4)
		}
		for range n {
			v, ok := randomValue(rng, m, fd, depth)
			if !ok {
				continue
			}
			if fd.IsList() {
				m.Mutable(fd).List().Append(v)
			} else {
				m.Set(fd, v)
			}
		}
	}
	return m.Interface()
}

func randomValue(rng *rand.Rand, m protoreflect.Message, fd protoreflect.FieldDescriptor, depth int) (protoreflect.Value, bool) {
	pick := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return rng.Int64N(100)
		case 1:
			return rng.Int64N(2)
		}
		return interestingInts[rng.IntN(len(interestingInts))]
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		if rng.IntN(2) == 0 {
			return protoreflect.ValueOfString("fuzz"), true
		}
		return protoreflect.ValueOfString(interestingStrings[rng.IntN(len(interestingStrings))]), true
	case protoreflect.BytesKind:
		b := make([]byte, rng.IntN(200))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		if len(b) > 61 && rng.IntN(2) == 0 {
			b[16] = 2 // the batch magic: get past the first check
		}
		return protoreflect.ValueOfBytes(b), true
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(rng.IntN(2) == 0), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(pick())), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(pick()), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(pick())), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(pick())), true
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if rng.IntN(4) == 0 {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(pick())), true // undefined
		}
		return protoreflect.ValueOfEnum(vals.Get(rng.IntN(vals.Len())).Number()), true
	case protoreflect.MessageKind:
		if depth > 2 {
			return protoreflect.Value{}, false
		}
		var sub protoreflect.Message
		if fd.IsList() {
			sub = m.Mutable(fd).List().NewElement().Message()
		} else {
			sub = m.NewField(fd).Message()
		}
		msg := randomMessage(rng, sub.Type(), depth+1)
		return protoreflect.ValueOfMessage(msg.ProtoReflect()), true
	}
	return protoreflect.Value{}, false
}

// TestMalformedAndRandomRequests sends, to every method, random bytes,
// random protobuf wire data, truncated messages, and well-formed messages
// with random field values. Each must get a clear status (see acceptable),
// the server must stay up and keep serving a well-behaved client, and its
// memory must stay bounded.
func TestMalformedAndRandomRequests(t *testing.T) {
	s := startServer(t, 0)
	p := newProbe(t, s, "edge-probe")
	cc := s.dial()
	// Random DeleteTopics remove "fuzz"; each round creates it again.
	ensureFuzz := func() {
		_, err := pb.NewAdminClient(cc).CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "fuzz", Partitions: 2})
		if err != nil && status.Code(err) != codes.AlreadyExists {
			t.Fatal(err)
		}
	}
	p.check("before")
	base := s.rss()
	rng := rand.New(rand.NewPCG(7, 7))
	tally := statusTally{}
	bad := 0
	send := func(m rpcMethod, kind string, msg []byte) {
		err := call(cc, m, msg, 2*time.Second)
		tally.add(m.path, err)
		if !acceptable(m, msg, err) {
			bad++
			if bad <= 20 {
				t.Errorf("%s with %s (%d bytes %x): unclear answer: %v", m.path, kind, len(msg), msg[:min(len(msg), 48)], err)
			}
		}
	}
	methods := apiMethods(t)
	for round := range 40 {
		for _, m := range methods {
			ensureFuzz()
			raw := make([]byte, rng.IntN(300))
			for i := range raw {
				raw[i] = byte(rng.IntN(256))
			}
			send(m, "random bytes", raw)
			send(m, "random wire data", wireGarbage(rng))
			valid, err := proto.Marshal(randomMessage(rng, m.input, 0))
			if err != nil {
				t.Fatal(err)
			}
			send(m, "random field values", valid)
			if len(valid) > 1 {
				send(m, "a truncated message", valid[:rng.IntN(len(valid))])
			}
		}
		if round%10 == 9 {
			p.check(fmt.Sprintf("after round %d", round))
		}
	}
	p.check("after")
	s.checkRSS("after random requests", base, 64<<20)
	t.Logf("statuses by method:%s", tally)
}

// The CI run that met the AlterTopic above: its bytes ask for 66
// partitions of "fuzz"; bytes that ask for none, or another method, are
// held to the 2 s rule.
func TestAsksPartitions(t *testing.T) {
	byPath := map[string]rpcMethod{}
	for _, m := range apiMethods(t) {
		byPath[m.path] = m
	}
	for _, c := range []struct {
		path string
		msg  []byte
		want int32
	}{
		{"/logd.v1.Admin/AlterTopic", []byte{0x0a, 0x04, 'f', 'u', 'z', 'z', 0x18, 0x42}, 66},
		{"/logd.v1.Admin/CreateTopic", []byte{0x0a, 0x01, 'x', 0x10, 0x03}, 3},
		{"/logd.v1.Admin/AlterTopic", []byte{0x0a, 0x04, 'f', 'u', 'z', 'z'}, 0},
		{"/logd.v1.Admin/AlterTopic", []byte{0xff, 0xff}, 0},
		{"/logd.v1.Log/Produce", []byte{0x0a, 0x01, 'x', 0x18, 0x42}, 0},
	} {
		m, ok := byPath[c.path]
		if !ok {
			t.Fatalf("no method %s", c.path)
		}
		if got := asksPartitions(m, c.msg); got != c.want {
			t.Errorf("%s %x: %d partitions, want %d", c.path, c.msg, got, c.want)
		}
	}
	alter := byPath["/logd.v1.Admin/AlterTopic"]
	deadline := status.Error(codes.DeadlineExceeded, "late")
	if !acceptable(alter, []byte{0x0a, 0x04, 'f', 'u', 'z', 'z', 0x18, 0x42}, deadline) {
		t.Error("a late AlterTopic to 66 partitions is not acceptable")
	}
	if acceptable(alter, []byte{0x0a, 0x04, 'f', 'u', 'z', 'z'}, deadline) {
		t.Error("a late AlterTopic asking no partitions is acceptable")
	}
}
