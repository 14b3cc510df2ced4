package server

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// requestCodec is the server's protobuf codec: grpc-go's, except that a
// request it cannot unmarshal (not protobuf, a wrong wire type, invalid
// UTF-8 in a string field) is answered INVALID_ARGUMENT, the client's
// fault, instead of the INTERNAL grpc-go gives any codec error. grpc-go
// turns every Unmarshal error into INTERNAL itself, so Unmarshal reports
// success and parks the error under the message; the interceptors (see
// requestCodecOptions) find it before any handler sees the message.
type requestCodec struct {
	encoding.CodecV2
	bad *sync.Map // message pointer -> unmarshal error
}

func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if err := c.CodecV2.Unmarshal(data, v); err != nil {
		c.bad.Store(v, err)
	}
	return nil
}

// check returns the INVALID_ARGUMENT status of a message that did not
// unmarshal, forgetting it, or nil.
func (c requestCodec) check(v any) error {
	err, ok := c.bad.LoadAndDelete(v)
	if !ok {
		return nil
	}
	return badMessage(err.(error))
}

// requestCodecOptions installs requestCodec: the codec and the
// interceptors that answer its parked errors, for unary calls (whose
// request is decoded before the interceptor runs) and streams (whose
// messages are decoded on each RecvMsg).
func requestCodecOptions() []grpc.ServerOption {
	c := requestCodec{CodecV2: encoding.GetCodecV2(proto.Name), bad: new(sync.Map)}
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(c),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := c.check(req); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, checkedStream{ss, c})
		}),
	}
}

// checkedStream is a server stream whose received messages are checked.
type checkedStream struct {
	grpc.ServerStream
	c requestCodec
}

func (s checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.c.check(m)
}
