package kafka

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokenListCore fails every ListOffset with an error of no kind the
// listener maps.
type brokenListCore struct{ *fakeCore }

var errBroken = errors.New("the disk controller caught fire")

func (brokenListCore) ListOffset(context.Context, Principal, string, int32, int64) (int64, int64, error) {
	return 0, 0, errBroken
}

// recordingHandler keeps the messages logged at Error, with their "err".
type recordingHandler struct {
	mu   sync.Mutex
	errs []string
}

func (h *recordingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			line += ": " + a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.errs = append(h.errs, line)
	h.mu.Unlock()
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// An error the listener does not map is answered UNKNOWN_SERVER_ERROR and
// logged at Error once per request, however many partitions it failed.
func TestKafkaUnexpectedErrorLoggedOncePerRequest(t *testing.T) {
	core := brokenListCore{newFakeCore()}
	if _, err := core.CreateTopic(context.Background(), "", topicConfig("t", 3)); err != nil {
		t.Fatal(err)
	}
	h := &recordingHandler{}
	s := startServer(t, core, Config{Logger: slog.New(h)})
	br := newClient(t, s.AdvertisedAddr()).SeedBrokers()[0]
	for range 2 {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		for p := range int32(3) {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := br.Request(testCtx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions {
			if p.ErrorCode != kerr.UnknownServerError.Code {
				t.Fatalf("partition %d answered %v, want UNKNOWN_SERVER_ERROR", p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.errs) != 2 {
		t.Fatalf("logged at Error %q, want one line per request (2)", h.errs)
	}
	for _, l := range h.errs {
		if !strings.Contains(l, errBroken.Error()) {
			t.Errorf("logged %q, which does not name the error", l)
		}
	}
}

// brokenFetchCore fails every partition of a fetch (perPartition) or the
// whole fetch with an error of no kind the listener maps.
type brokenFetchCore struct {
	*fakeCore
	perPartition bool
}

func (c brokenFetchCore) Fetch(_ context.Context, r FetchRequest) (FetchResult, error) {
	if !c.perPartition {
		return FetchResult{}, errBroken
	}
	var res FetchResult
	for _, p := range r.Partitions {
		res.Partitions = append(res.Partitions, FetchedPartition{Topic: p.Topic, Partition: p.Partition, Err: errBroken})
	}
	return res, nil
}

// A fetch's unmapped errors are logged like every other request's: once
// per request, whether the whole fetch or each partition failed.
func TestKafkaFetchUnexpectedErrorLogged(t *testing.T) {
	for _, perPartition := range []bool{false, true} {
		core := brokenFetchCore{newFakeCore(), perPartition}
		if _, err := core.CreateTopic(context.Background(), "", topicConfig("t", 3)); err != nil {
			t.Fatal(err)
		}
		h := &recordingHandler{}
		s := startServer(t, core, Config{Logger: slog.New(h)})
		br := newClient(t, s.AdvertisedAddr()).SeedBrokers()[0]
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MaxBytes = 11, 10, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		for p := range int32(3) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := br.Request(testCtx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range resp.(*kmsg.FetchResponse).Topics[0].Partitions {
			if p.ErrorCode != kerr.UnknownServerError.Code {
				t.Fatalf("perPartition=%v: partition %d answered %v, want UNKNOWN_SERVER_ERROR", perPartition, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
		h.mu.Lock()
		if len(h.errs) != 1 || !strings.Contains(h.errs[0], errBroken.Error()) {
			t.Errorf("perPartition=%v: logged at Error %q, want one line naming the error", perPartition, h.errs)
		}
		h.mu.Unlock()
	}
}
