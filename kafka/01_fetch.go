package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxFetchWait caps a fetch's long poll whatever the client asks.
const maxFetchWait = 30 * time.Second

// handleFetch is a long poll over the core's Fetch: it returns once
// MinBytes are available or MaxWaitMillis passed, with the stored batches
// as they are (never re-encoded). Fetch sessions (KIP-227) are refused: the
// answer's session id is always 0, so clients send full fetches; an
// incremental fetch naming a session gets FETCH_SESSION_ID_NOT_FOUND.
// The virtual offsets topic is answered empty (offsets_topic.go).
//
// The connection's fetch budget (connBudget) is reserved here, in the
// reader, before the fetch starts; the core's read budget is returned as
// soon as the answer is read, its memory counting against the
// connection's budget until the response is written.
func handleFetch(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.SessionID != 0 {
		return func() kmsg.Response {
			resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
			return resp
		}
	}
	freq := fetchRequest(r.c.principal, req)
	// A core without transactions (a test's fake) holds none open: every
	// record is committed.
	freq.ReadCommitted = freq.ReadCommitted && s.txnCore() != nil
	held := fetchEstimate(freq)
	budget := r.c.fetches
	if err := budget.reserve(r.ctx, held); err != nil {
		// The connection is closing: nothing is sent.
		return func() kmsg.Response { return nil }
	}
	r.afterWrite = func() { budget.adjust(-held) }
	return func() kmsg.Response {
		start := time.Now()
		res, err := s.core.Fetch(r.ctx, freq)
		if err != nil {
			fetchFailed(r, resp, req, err)
			return resp
		}
		onlyOffsetsTopic := s.offsetsTopicFetch(res)
		size := fetchedBytes(res)
		budget.adjust(size - held)
		held = size
		if res.Release != nil {
			res.Release()
		}
		if onlyOffsetsTopic {
			offsetsTopicWait(r, start, freq.MaxWait)
		}
		fetchAnswer(r, resp, res, freq.ReadCommitted)
		resp.ThrottleMillis = s.throttle(r, false, fetchedLen(res))
		return resp
	}
}

// fetchRequest is the core's request for a Kafka fetch.
func fetchRequest(p Principal, req *kmsg.FetchRequest) FetchRequest {
	freq := FetchRequest{
		Principal: p,
		MinBytes:  int(max(req.MinBytes, 0)),
		MaxBytes:  int(max(req.MaxBytes, 0)),
		MaxWait:   min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, maxFetchWait),
		// read_committed: stop at the last stable offset.
		ReadCommitted: req.IsolationLevel == 1,
	}
	if req.Version < 3 || freq.MaxBytes == 0 {
		freq.MaxBytes = 0 // the core's default
	}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			freq.Partitions = append(freq.Partitions, FetchPartition{
				Topic: rt.Topic, Partition: rp.Partition, Offset: rp.FetchOffset,
				MaxBytes: int(max(rp.PartitionMaxBytes, 0)),
			})
		}
	}
	return freq
}

// fetchAnswer fills resp with the core's answer, grouped by topic.
func fetchAnswer(r *request, resp *kmsg.FetchResponse, res FetchResult, readCommitted bool) {
	byTopic := map[string]int{}
	for _, fp := range res.Partitions {
		i, ok := byTopic[fp.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[fp.Topic] = i
			t := kmsg.NewFetchResponseTopic()
			t.Topic = fp.Topic
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = fp.Partition
		p.ErrorCode = r.topicCode(fp.Err)
		p.HighWatermark, p.LastStableOffset, p.LogStartOffset = fp.HighWatermark, fp.HighWatermark, fp.LogStart
		if readCommitted && fp.Err == nil {
			p.LastStableOffset, p.AbortedTransactions = fp.LastStable, abortedTxns(fp)
		}
		if fp.Err != nil {
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
		}
		p.RecordBatches = fp.Batches
		if p.RecordBatches == nil {
			p.RecordBatches = []byte{} // a null record set is a parse error to librdkafka
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
}

// fetchFailed answers every partition asked for with err's code.
func fetchFailed(r *request, resp *kmsg.FetchResponse, req *kmsg.FetchRequest, err error) {
	code := r.topicCode(err)
	for _, rt := range req.Topics {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.ErrorCode = rp.Partition, code
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
			p.RecordBatches = []byte{}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
}
