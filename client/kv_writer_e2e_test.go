package client_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/client"
	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// Through the gRPC KV service: a put sent again with its writer (as the
// client's retry sends it) is answered with the first attempt's offset,
// a delete likewise; a writer with a bad id or epoch is refused with a
// message saying what is wanted.
func TestServerKVPutSentTwiceByItsWriterIsStoredOnce(t *testing.T) {
	c, s := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "cfg", client.TopicOptions{Partitions: 1, Config: client.TopicConfig{CleanupPolicy: "compact"}}); err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	kv := logdv1.NewKVClient(cc)
	put := &logdv1.KVPutRequest{Topic: "cfg", Key: []byte("k"), Value: []byte("v"), Writer: &logdv1.KVWriter{Id: 5, Epoch: 3}}
	first, err := kv.Put(ctx, put)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.KV("cfg").Put(ctx, []byte("k"), []byte("between")); err != nil {
		t.Fatal(err)
	}
	again, err := kv.Put(ctx, put)
	if err != nil || again.Offset != first.Offset {
		t.Fatalf("sent again: offset %v (err %v), the first stored it at %d", again.GetOffset(), err, first.Offset)
	}
	del := &logdv1.KVDeleteRequest{Topic: "cfg", Key: []byte("k"), Writer: &logdv1.KVWriter{Id: 5, Epoch: 4}}
	d1, err := kv.Delete(ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	if d2, err := kv.Delete(ctx, del); err != nil || d2.Offset != d1.Offset {
		t.Fatalf("delete sent again: offset %v (err %v), the first stored it at %d", d2.GetOffset(), err, d1.Offset)
	}
	if e, ok, err := c.KV("cfg").Get(ctx, []byte("k")); err != nil || ok {
		t.Fatalf("k after the delete: %q found %v err %v", e.Value, ok, err)
	}
	for _, w := range []*logdv1.KVWriter{{Id: 0, Epoch: 1}, {Id: 5, Epoch: -1}, {Id: 5, Epoch: 40000}} {
		_, err := kv.Put(ctx, &logdv1.KVPutRequest{Topic: "cfg", Key: []byte("k"), Value: []byte("v"), Writer: w})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("writer %v: %v, want InvalidArgument", w, err)
		}
	}
}
