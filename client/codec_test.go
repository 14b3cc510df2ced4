package client

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// The aliasing decoder reads what proto.Unmarshal reads.
func TestUnmarshalFetchResponseMatchesProto(t *testing.T) {
	for _, in := range []*logdv1.FetchResponse{
		{},
		{Topic: "t", Partition: 3, Batches: bytes.Repeat([]byte{1, 2, 3}, 1000), LogStartOffset: 5, HighWatermark: 9, NextOffset: 7,
			Records: []*logdv1.Record{{Key: []byte("k"), Value: []byte("v")}}},
		{Topic: "only-topic", NextOffset: 1},
	} {
		wire, err := proto.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var got logdv1.FetchResponse
		if err := unmarshalFetchResponse(wire, &got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&got, in) {
			t.Fatalf("decoded %v, want %v", &got, in)
		}
	}
	var got logdv1.FetchResponse
	if err := unmarshalFetchResponse([]byte{0x1a, 0x05, 1}, &got); err == nil {
		t.Fatal("a truncated batches field decoded without error")
	}
}
