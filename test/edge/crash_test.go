package edge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
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
		s.kill()

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
		s.kill()
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
		s.kill()

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
		s.kill()
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
		s.kill()
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

// TestRetryAcrossRestarts: an idempotent producer's batch acknowledged
// before a kill -9 (the client never got the answer) and retried, unchanged,
// after the restart is answered as a duplicate with its original offsets and
// not stored twice, whether or not the segment holding it was rolled before
// the kill. (Found: the producer state is rebuilt from the active segment
// only, partition.recoverProducers; a batch in an older segment is appended
// again.)
func TestRetryAcrossRestarts(t *testing.T) {
	for _, c := range []struct {
		name   string
		others int // batches other producers append after it (4 KiB segments)
	}{{"in the active segment", 0}, {"in a rolled segment", 60}} {
		t.Run(c.name, func(t *testing.T) { retryAcrossRestart(t, c.others) })
	}
}

func retryAcrossRestart(t *testing.T, others int) {
	dir := t.TempDir()
	s := startServerIn(t, dir)
	seg := int64(4 << 10)
	if _, err := pb.NewAdminClient(s.dial()).CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "idem", Partitions: 1,
		Config: &pb.TopicConfig{SegmentBytes: &seg}}); err != nil {
		t.Fatal(err)
	}
	part := int32(0)
	mk := func(id int64, seq int32, n int) []byte {
		recs := make([]batch.Record, n)
		for i := range recs {
			// Timestamped now: records from 1970 would be trimmed by the
			// default 7-day retention before the retry.
			recs[i] = batch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte(fmt.Sprintf("p%d-s%d", id, int(seq)+i))}
		}
		return batch.Encode(nil, 0, batch.Producer{ID: id, Epoch: 0, Sequence: seq}, recs)
	}
	logc := pb.NewLogClient(s.dial())
	produce := func(b []byte) *pb.PartitionAppend {
		t.Helper()
		resp, err := logc.Produce(timeout(t, 10*time.Second), &pb.ProduceRequest{Topic: "idem", Partition: &part, Batch: b})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Appends[0]
	}
	produce(mk(42, 0, 3))
	last := mk(42, 3, 2) // the batch whose answer the producer never got
	orig := produce(last)
	for i := range others {
		produce(mk(int64(100+i%3), int32(i/3*5), 5))
	}
	s.kill()
	s = startServerIn(t, dir)
	logc = pb.NewLogClient(s.dial())
	a := produce(last)
	if !a.Duplicate {
		t.Fatalf("the retried batch, appended at %d-%d before the kill, was appended again at %d-%d", orig.BaseOffset, orig.LastOffset, a.BaseOffset, a.LastOffset)
	}
	if a.BaseOffset != orig.BaseOffset || a.LastOffset != orig.LastOffset {
		t.Fatalf("the duplicate answer gives %d-%d, the original append was %d-%d", a.BaseOffset, a.LastOffset, orig.BaseOffset, orig.LastOffset)
	}
}

// TestKillDuringDeleteTopicOffsets kills the server at a random moment
// around a DeleteTopic of a topic a group has committed offsets on, 10
// times: after each restart the topic and the group's offsets on it are
// both there, or both gone (a re-created topic must not inherit offsets of
// the deleted one). (Found: Server.DeleteTopic deletes the topic, then its
// offsets in a second Pebble batch; a kill in between keeps the offsets,
// and the topic created again under the name inherits them.)
func TestKillDuringDeleteTopicOffsets(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(12, 12))
	for round := range 10 {
		name := fmt.Sprintf("committed-%d", round)
		s := startServerIn(t, dir)
		cc := s.dial()
		admin, logc, offs := pb.NewAdminClient(cc), pb.NewLogClient(cc), pb.NewOffsetsClient(cc)
		if _, err := admin.CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: name, Partitions: 2}); err != nil {
			t.Fatal(err)
		}
		req := &pb.CommitOffsetsRequest{Group: "g"}
		for p := range int32(2) {
			if _, err := logc.Produce(timeout(t, 10*time.Second), &pb.ProduceRequest{Topic: name, Partition: &p,
				Records: []*pb.Record{{Value: []byte("a")}, {Value: []byte("b")}}}); err != nil {
				t.Fatal(err)
			}
			req.Offsets = append(req.Offsets, &pb.CommittedOffset{Topic: name, Partition: p, Offset: 2})
		}
		if _, err := offs.CommitOffsets(timeout(t, 10*time.Second), req); err != nil {
			t.Fatal(err)
		}
		go admin.DeleteTopic(context.Background(), &pb.DeleteTopicRequest{Name: name})
		time.Sleep(time.Duration(rng.IntN(800)) * time.Microsecond)
		s.kill()

		s = startServerIn(t, dir)
		cc = s.dial()
		admin, offs = pb.NewAdminClient(cc), pb.NewOffsetsClient(cc)
		_, err := admin.DescribeTopic(timeout(t, 10*time.Second), &pb.DescribeTopicRequest{Name: name})
		exists := status.Code(err) == codes.OK
		f, ferr := offs.FetchOffsets(timeout(t, 10*time.Second), &pb.FetchOffsetsRequest{Group: "g", Topic: name})
		if ferr != nil && status.Code(ferr) != codes.NotFound {
			t.Fatalf("round %d: fetch offsets: %v", round, ferr)
		}
		n := len(f.GetOffsets())
		t.Logf("round %d: topic exists %v, %d committed offsets", round, exists, n)
		if exists && n != 2 {
			t.Fatalf("round %d: the topic survived the kill but the group has %d of its 2 offsets", round, n)
		}
		if !exists {
			if _, err := admin.CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: name, Partitions: 2}); err != nil {
				t.Fatalf("round %d: re-create: %v", round, err)
			}
			f, err := offs.FetchOffsets(timeout(t, 10*time.Second), &pb.FetchOffsetsRequest{Group: "g", Topic: name})
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Offsets) != 0 {
				t.Fatalf("round %d: the re-created topic inherited the deleted one's committed offsets: %v", round, f.Offsets)
			}
		}
		s.kill()
	}
}
