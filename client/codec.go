package client

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// fetchCodec is the proto codec, except that a FetchResponse's batches
// alias the received message instead of being copied out of it: a catch-up
// read is MiB-sized messages of batches, and the copy showed in the
// consumer's profile (a fifth of its CPU at 1 KiB records). The message is
// copied once, into memory of its own, which the records then point into.
type fetchCodec struct{}

var (
	protoCodec    = encoding.GetCodecV2("proto")
	batchesNumber = (&logdv1.FetchResponse{}).ProtoReflect().Descriptor().Fields().ByName("batches").Number()
)

func (fetchCodec) Name() string { return "proto" } // the content-subtype: the server's usual codec

func (fetchCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (fetchCodec) Unmarshal(data mem.BufferSlice, v any) error {
	resp, ok := v.(*logdv1.FetchResponse)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	return unmarshalFetchResponse(data.Materialize(), resp)
}

// unmarshalFetchResponse decodes buf into resp, resp.Batches pointing into
// buf. Every other field goes through proto.Unmarshal.
func unmarshalFetchResponse(buf []byte, resp *logdv1.FetchResponse) error {
	var batches []byte
	rest := make([]byte, 0, 64)
	for b := buf; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		if num == batchesNumber && typ == protowire.BytesType {
			v, k := protowire.ConsumeBytes(b[n:])
			if k < 0 {
				return protowire.ParseError(k)
			}
			// Repeated occurrences of a bytes field: the last wins.
			batches = v
		} else {
			rest = append(rest, b[:n+m]...)
		}
		b = b[n+m:]
	}
	if err := proto.Unmarshal(rest, resp); err != nil {
		return err
	}
	resp.Batches = batches
	return nil
}
