package e2e

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/logd/logd/proto/logd/v1"
)

type acked struct {
	key       string
	seq       int
	partition int32
	offset    int64
}

// TestKill9LosesNoAcknowledgedRecord produces keyed records from several
// goroutines, kills the server with SIGKILL mid-stream, restarts it on the
// same directory, and checks that every acknowledged record is back at its
// offset and that each key's records are in the order they were sent.
func TestKill9LosesNoAcknowledgedRecord(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	logc, admin := n.dial(t)
	const parts = 3
	if _, err := admin.CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "events", Partitions: parts}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var acks []acked
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys := []string{fmt.Sprintf("w%d-a", w), fmt.Sprintf("w%d-b", w)}
			seq := map[string]int{}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Each request carries a few records of one key, in order.
				key := keys[i%2]
				var recs []*pb.Record
				for range 1 + i%4 {
					recs = append(recs, &pb.Record{Key: []byte(key), Value: fmt.Appendf(nil, "%s:%d", key, seq[key])})
					seq[key]++
				}
				resp, err := logc.Produce(timeout(t, 5*time.Second), &pb.ProduceRequest{Topic: "events", Records: recs})
				if err != nil {
					return // the server is gone; what was not acknowledged may or may not be stored
				}
				a := resp.Appends[0]
				mu.Lock()
				for j, r := range recs {
					var s int
					fmt.Sscanf(string(r.Value)[len(key)+1:], "%d", &s)
					acks = append(acks, acked{key, s, a.Partition, a.BaseOffset + int64(j)})
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
	n.kill()
	close(stop)
	wg.Wait()
	if len(acks) == 0 {
		t.Fatal("no record was acknowledged before the kill")
	}

	n2 := startNode(t, dir)
	logc, _ = n2.dial(t)
	stored := map[int32]map[int64]string{}
	for p := int32(0); p < parts; p++ {
		stored[p] = map[int64]string{}
		var order []string
		for off := int64(0); ; {
			f, err := logc.Fetch(timeout(t, 10*time.Second), &pb.FetchRequest{Topic: "events", Partition: p, Offset: off, Decode: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Records) == 0 {
				break
			}
			for _, r := range f.Records {
				if r.Offset != off {
					t.Fatalf("partition %d: offset %d where %d expected (gap)", p, r.Offset, off)
				}
				stored[p][r.Offset] = string(r.Value)
				order = append(order, string(r.Value))
				off++
			}
		}
		checkKeyOrder(t, p, order)
	}
	for _, a := range acks {
		want := fmt.Sprintf("%s:%d", a.key, a.seq)
		if got := stored[a.partition][a.offset]; got != want {
			t.Fatalf("acknowledged %s at %d/%d, found %q after restart", want, a.partition, a.offset, got)
		}
	}
	t.Logf("%d acknowledged records all present after kill -9", len(acks))
	n2.stop()
}

// checkKeyOrder: within a partition each key's sequence numbers increase.
func checkKeyOrder(t *testing.T, p int32, values []string) {
	t.Helper()
	last := map[string]int{}
	for _, v := range values {
		i := strings.LastIndexByte(v, ':')
		var seq int
		fmt.Sscanf(v[i+1:], "%d", &seq)
		if prev, ok := last[v[:i]]; ok && seq <= prev {
			t.Fatalf("partition %d: key %s has %d after %d", p, v[:i], seq, prev)
		}
		last[v[:i]] = seq
	}
}

// TestCommittedOffsetsSurviveKill9: an acknowledged commit is durable: the
// group's offsets are back after SIGKILL and restart.
func TestCommittedOffsetsSurviveKill9(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	logc, admin := n.dial(t)
	if _, err := admin.CreateTopic(timeout(t, 10*time.Second), &pb.CreateTopicRequest{Name: "t", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		var recs []*pb.Record
		for i := range 10 {
			recs = append(recs, &pb.Record{Value: fmt.Appendf(nil, "%d", i)})
		}
		if _, err := logc.Produce(timeout(t, 10*time.Second), &pb.ProduceRequest{Topic: "t", Partition: &p, Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	oc := pb.NewOffsetsClient(n.conn(t))
	for i := int64(1); i <= 7; i++ {
		if _, err := oc.CommitOffsets(timeout(t, 10*time.Second), &pb.CommitOffsetsRequest{Group: "g", Offsets: []*pb.CommittedOffset{
			{Topic: "t", Partition: 0, Offset: i}, {Topic: "t", Partition: 1, Offset: 10 - i, Metadata: "m"}}}); err != nil {
			t.Fatal(err)
		}
	}
	n.kill()
	n2 := startNode(t, dir)
	oc = pb.NewOffsetsClient(n2.conn(t))
	f, err := oc.FetchOffsets(timeout(t, 10*time.Second), &pb.FetchOffsetsRequest{Group: "g", Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Offsets) != 2 || f.Offsets[0].Offset != 7 || f.Offsets[1].Offset != 3 || f.Offsets[1].Metadata != "m" || f.Offsets[0].Lag != 3 {
		t.Fatalf("after kill -9: %+v", f.Offsets)
	}
	n2.stop()
}
