package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// rawCodec puts bytes on the wire as they are, where a message belongs.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}

// TestUnparsableRequestIsInvalidArgument: a request that is not protobuf,
// or has invalid UTF-8 in a string field, is the client's fault:
// INVALID_ARGUMENT, for unary calls and streams alike, not grpc-go's
// INTERNAL (issue 17 item 6).
func TestUnparsableRequestIsInvalidArgument(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "t", 1)
	badUTF8 := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "t\xff\xfe") // topic
	wrongType := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.Fixed32Type), 1)[:3]   // truncated
	for _, m := range []struct {
		path          string
		client, sever bool
	}{
		{"/logd.v1.Log/Produce", false, false},
		{"/logd.v1.Admin/DescribeTopic", false, false},
		{"/logd.v1.Log/Subscribe", false, true},
		{"/logd.v1.Log/ProduceStream", true, true},
	} {
		for name, msg := range map[string][]byte{"invalid UTF-8": badUTF8, "not protobuf": wrongType} {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var err error
			if !m.client && !m.sever {
				var reply []byte
				err = c.cc.Invoke(cctx, m.path, msg, &reply, grpc.ForceCodec(rawCodec{}))
			} else {
				var st grpc.ClientStream
				st, err = c.cc.NewStream(cctx, &grpc.StreamDesc{ClientStreams: m.client, ServerStreams: m.sever}, m.path, grpc.ForceCodec(rawCodec{}))
				if err == nil {
					st.SendMsg(msg)
					st.CloseSend()
					var reply []byte
					err = st.RecvMsg(&reply)
				}
			}
			cancel()
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("%s with %s: %v, want INVALID_ARGUMENT", m.path, name, err)
			}
		}
	}
	// The server still serves well-formed requests.
	if _, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Records: []*pb.Record{{Value: []byte("ok")}}}); err != nil {
		t.Fatal(err)
	}
}
