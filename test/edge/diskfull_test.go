package edge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/status"

	pb "github.com/logd/logd/proto/logd/v1"
)

// fill writes zeros into dir/filler until the disk is full.
func fill(t *testing.T, dir string) {
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 4 << 10, 512, 1} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
}

// TestDiskFull runs the server on a full disk (a 32 MiB tmpfs, root only)
// and keeps producing, committing offsets and creating topics: each request
// must get a status and the server must stay up; once space is freed it
// must serve writes again. (Before the server refused writes on a nearly
// full disk, the first offset commit made Pebble's WAL write fail, Pebble
// called Fatalf ("fatal commit error"), and logd exited.)
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: run as root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=33554432"); err != nil {
		t.Skipf("no tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	s := startServerIn(t, filepath.Join(dir, "data"))
	cc := s.dial()
	admin, logc, offs := pb.NewAdminClient(cc), pb.NewLogClient(cc), pb.NewOffsetsClient(cc)
	if _, err := admin.CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "full", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	fill(t, dir)
	tally := map[string]int{}
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := logc.Produce(ctx, &pb.ProduceRequest{Topic: "full", Records: []*pb.Record{{Value: make([]byte, 1000)}}})
		tally["produce "+status.Code(err).String()]++
		_, err = offs.CommitOffsets(ctx, &pb.CommitOffsetsRequest{Group: fmt.Sprintf("g%d", i), Offsets: []*pb.CommittedOffset{
			{Topic: "full", Partition: 0, Offset: int64(i), Metadata: string(make([]byte, 4000))}}})
		tally["commit "+status.Code(err).String()]++
		if i%20 == 0 {
			_, err = admin.CreateTopic(ctx, &pb.CreateTopicRequest{Name: fmt.Sprintf("t%d", i), Partitions: 1})
			tally["create "+status.Code(err).String()]++
		}
		cancel()
		select {
		case <-s.exited:
			t.Fatalf("logd exited on a full disk after %v; its last lines:\n%s", tally, s.stderr)
		default:
		}
	}
	t.Logf("on a full disk: %v", tally)
	os.Remove(filepath.Join(dir, "filler"))
	p0 := int32(0)
	if _, err := logc.Produce(timeout(t, 10*time.Second), &pb.ProduceRequest{Topic: "full", Partition: &p0, Records: []*pb.Record{{Value: []byte("after")}}}); err != nil {
		t.Errorf("produce after space was freed: %v", err)
	}
	if _, err := offs.CommitOffsets(timeout(t, 10*time.Second), &pb.CommitOffsetsRequest{Group: "after", Offsets: []*pb.CommittedOffset{{Topic: "full", Offset: 1}}}); err != nil {
		t.Errorf("commit after space was freed: %v", err)
	}
}
