package server_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// Under --auth required, a call that presents no credentials is refused
// when its headers arrive: the node does not wait for (and buffer) its
// request message first.
func TestUnauthenticatedCallRefusedBeforeItsMessage(t *testing.T) {
	s := nodetest.Start(t, secured)
	cc, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := cc.NewStream(ctx, &grpc.StreamDesc{}, pb.Log_Produce_FullMethodName)
	if err != nil {
		t.Fatal(err)
	}
	// The request message is never sent.
	err = st.RecvMsg(new(pb.ProduceResponse))
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a call without credentials whose message is not sent: %v, want UNAUTHENTICATED at once", err)
	}
}
