package edge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/logd/logd/proto/logd/v1"
)

// TestKillDuringDeleteTopic kills the server (SIGKILL) at a random moment
// around a DeleteTopic, 10 times, restarting it each time on the same
// directory. After each restart the topic is either whole (every record
// there) or gone, and re-creating a gone topic gives an empty one. (Found:
// Topics.Delete removes the topic from the registry before it renames the
// partition directories away; a kill in between leaves the directories,
// startup keeps non-empty directories of unknown topics, and CreateTopic
// opens them: the re-created topic holds the deleted records.)
func TestKillDuringDeleteTopic(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(9, 9))
	for round := range 10 {
		s := startServerIn(t, dir)
		cc := s.dial()
		admin, logc := pb.NewAdminClient(cc), pb.NewLogClient(cc)
		name := "victim"
		if _, err := admin.CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: name, Partitions: 2}); err != nil {
			t.Fatalf("round %d: create: %v", round, err)
		}
		for i := range 20 {
			p := int32(i % 2)
			if _, err := logc.Produce(timeout(t, 10*time.Second), &pb.ProduceRequest{Topic: name, Partition: &p,
				Records: []*pb.Record{{Value: []byte(fmt.Sprint(i))}}}); err != nil {
				t.Fatalf("round %d: produce: %v", round, err)
			}
		}
		go admin.DeleteTopic(context.Background(), &pb.DeleteTopicRequest{Name: name})
		time.Sleep(time.Duration(rng.IntN(600)) * time.Microsecond)
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited

		s = startServerIn(t, dir)
		cc = s.dial()
		admin, logc = pb.NewAdminClient(cc), pb.NewLogClient(cc)
		d, err := admin.DescribeTopic(timeout(t, 10*time.Second), &pb.DescribeTopicRequest{Name: name})
		switch status.Code(err) {
		case codes.OK:
			for _, pi := range d.Partitions {
				f, err := logc.Fetch(timeout(t, 10*time.Second), &pb.FetchRequest{Topic: name, Partition: pi.Partition, Decode: true})
				if err != nil || len(f.Records) != 10 {
					t.Fatalf("round %d: the topic survived the kill but partition %d has %d of 10 records (%v)", round, pi.Partition, len(f.GetRecords()), err)
				}
			}
			if _, err := admin.DeleteTopic(timeout(t, 10*time.Second), &pb.DeleteTopicRequest{Name: name}); err != nil {
				t.Fatalf("round %d: delete after restart: %v", round, err)
			}
			t.Logf("round %d: the topic survived whole", round)
		case codes.NotFound:
			if _, err := admin.CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: name, Partitions: 2}); err != nil {
				t.Fatalf("round %d: re-create after the delete: %v", round, err)
			}
			for p := range int32(2) {
				f, err := logc.Fetch(timeout(t, 10*time.Second), &pb.FetchRequest{Topic: name, Partition: p, Decode: true})
				if err != nil || len(f.Records) != 0 || f.HighWatermark != 0 {
					t.Fatalf("round %d: the re-created topic's partition %d: %d records, high watermark %d (%v)", round, p, len(f.GetRecords()), f.GetHighWatermark(), err)
				}
			}
			if _, err := admin.DeleteTopic(timeout(t, 10*time.Second), &pb.DeleteTopicRequest{Name: name}); err != nil {
				t.Fatalf("round %d: delete: %v", round, err)
			}
			t.Logf("round %d: the topic was gone", round)
		default:
			t.Fatalf("round %d: describe after restart: %v", round, err)
		}
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
}

// TestKillDuringCreateTopic kills the server at a random moment around a
// CreateTopic of 8 partitions, 10 times. After each restart the topic
// exists with all 8 partitions, each empty and writable, or does not exist
// and can be created.
func TestKillDuringCreateTopic(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(10, 10))
	for round := range 10 {
		name := fmt.Sprintf("born-%d", round)
		s := startServerIn(t, dir)
		admin := pb.NewAdminClient(s.dial())
		go admin.CreateTopic(context.Background(), &pb.CreateTopicRequest{Name: name, Partitions: 8})
		time.Sleep(time.Duration(rng.IntN(30000)) * time.Microsecond)
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited

		s = startServerIn(t, dir)
		cc := s.dial()
		admin, logc := pb.NewAdminClient(cc), pb.NewLogClient(cc)
		d, err := admin.DescribeTopic(timeout(t, 10*time.Second), &pb.DescribeTopicRequest{Name: name})
		switch status.Code(err) {
		case codes.OK:
			if d.Topic.Partitions != 8 || len(d.Partitions) != 8 {
				t.Fatalf("round %d: the topic survived with %d partitions (%d described), want 8", round, d.Topic.Partitions, len(d.Partitions))
			}
			t.Logf("round %d: the topic exists", round)
		case codes.NotFound:
			if _, err := admin.CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: name, Partitions: 8}); err != nil {
				t.Fatalf("round %d: create after the kill: %v", round, err)
			}
			t.Logf("round %d: the topic did not exist", round)
		default:
			t.Fatalf("round %d: describe after restart: %v", round, err)
		}
		for p := range int32(8) {
			resp, err := logc.Produce(timeout(t, 10*time.Second), &pb.ProduceRequest{Topic: name, Partition: &p, Records: []*pb.Record{{Value: []byte("x")}}})
			if err != nil || resp.Appends[0].BaseOffset != 0 {
				t.Fatalf("round %d: partition %d: %v %v", round, p, resp, err)
			}
		}
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
}

// TestKillDuringCommitOffsets kills the server at a random moment around a
// CommitOffsets of 8 partitions (one request: atomic, as the client
// documents), 10 times: after each restart the group's 8 offsets are all
// the old value or all the new one.
func TestKillDuringCommitOffsets(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(11, 11))
	s := startServerIn(t, dir)
	cc := s.dial()
	admin, logc := pb.NewAdminClient(cc), pb.NewLogClient(cc)
	if _, err := admin.CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "eight", Partitions: 8}); err != nil {
		t.Fatal(err)
	}
	for p := range int32(8) {
		recs := make([]*pb.Record, 20)
		for i := range recs {
			recs[i] = &pb.Record{Value: []byte("x")}
		}
		if _, err := logc.Produce(timeout(t, 10*time.Second), &pb.ProduceRequest{Topic: "eight", Partition: &p, Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(offs pb.OffsetsClient, ctx context.Context, v int64) error {
		req := &pb.CommitOffsetsRequest{Group: "g"}
		for p := range int32(8) {
			req.Offsets = append(req.Offsets, &pb.CommittedOffset{Topic: "eight", Partition: p, Offset: v})
		}
		_, err := offs.CommitOffsets(ctx, req)
		return err
	}
	old := int64(0)
	if err := commit(pb.NewOffsetsClient(cc), timeout(t, 10*time.Second), old); err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		next := old + 1
		go commit(pb.NewOffsetsClient(cc), context.Background(), next)
		time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
		s = startServerIn(t, dir)
		cc = s.dial()
		resp, err := pb.NewOffsetsClient(cc).FetchOffsets(timeout(t, 10*time.Second), &pb.FetchOffsetsRequest{Group: "g", Topic: "eight"})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int64]int{}
		for _, o := range resp.Offsets {
			seen[o.Offset]++
		}
		if len(resp.Offsets) != 8 || len(seen) != 1 {
			t.Fatalf("round %d: after a kill during a commit of %d over %d: offsets %v", round, next, old, seen)
		}
		for v := range seen {
			t.Logf("round %d: all 8 at %d", round, v)
			old = v
		}
	}
}
