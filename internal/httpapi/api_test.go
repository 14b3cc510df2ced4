package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/logd/logd/broker"
)

func TestProduceAndRead(t *testing.T)  { testProduceAndRead(t, newFakeEnv(t)) }
func TestIdempotencyKey(t *testing.T)  { testIdempotencyKey(t, newFakeEnv(t)) }
func TestBadRequests(t *testing.T)     { testBadRequests(t, newFakeEnv(t)) }
func TestTopicsEndpoints(t *testing.T) { testTopicsEndpoints(t, newFakeEnv(t)) }

type produceResp struct {
	Error   string `json:"error"`
	Records []struct {
		Partition int32  `json:"partition"`
		Offset    *int64 `json:"offset"`
		Duplicate bool   `json:"duplicate"`
		Error     string `json:"error"`
	} `json:"records"`
}

type readResp struct {
	Records       []recordJSON `json:"records"`
	NextOffset    int64        `json:"next_offset"`
	HighWatermark int64        `json:"high_watermark"`
	LogStart      int64        `json:"log_start"`
}

func testProduceAndRead(t *testing.T, e env) {
	e.createTopic(t, "orders", 3)
	srv, _ := serve(t, e.core(), Config{})
	body := `{"records": [
		{"key": "k1", "value": "hello", "headers": {"h": "v"}},
		{"key": "k1", "value": {"base64": "/wA="}},
		{"value": "unkeyed", "partition": 2},
		{"key": null, "value": null, "partition": 2}]}`
	var pr produceResp
	if st := do(t, "POST", srv.URL+"/v1/topics/orders/records", body, nil, &pr); st != http.StatusOK {
		t.Fatalf("produce: %d %+v", st, pr)
	}
	if len(pr.Records) != 4 {
		t.Fatalf("answered %d records, want 4", len(pr.Records))
	}
	k1 := pr.Records[0].Partition
	if pr.Records[1].Partition != k1 || *pr.Records[1].Offset != *pr.Records[0].Offset+1 {
		t.Fatalf("records of one key: %+v then %+v, want one partition, consecutive offsets", pr.Records[0], pr.Records[1])
	}
	if pr.Records[2].Partition != 2 || pr.Records[3].Partition != 2 {
		t.Fatalf("explicit partitions: %+v", pr.Records)
	}
	var rr readResp
	url := fmt.Sprintf("%s/v1/topics/orders/records?partition=%d&offset=%d&max=10", srv.URL, k1, *pr.Records[0].Offset)
	if st := do(t, "GET", url, "", nil, &rr); st != http.StatusOK {
		t.Fatalf("read: %d", st)
	}
	if len(rr.Records) < 2 {
		t.Fatalf("read %d records, want 2 or more: %+v", len(rr.Records), rr)
	}
	r0, r1 := rr.Records[0], rr.Records[1]
	if *r0.Key != "k1" || *r0.Value != "hello" || r0.Headers["h"] != "v" || r0.Topic != "orders" || r0.Offset != *pr.Records[0].Offset {
		t.Fatalf("first record read back as %+v", r0)
	}
	if *r1.Value != "/wA=" || r1.ValueEncoding != "base64" {
		t.Fatalf("binary value read back as %q (%s)", *r1.Value, r1.ValueEncoding)
	}
	// max bounds the answer and next_offset continues it.
	url = fmt.Sprintf("%s/v1/topics/orders/records?partition=2&offset=%d&max=1", srv.URL, *pr.Records[2].Offset)
	if st := do(t, "GET", url, "", nil, &rr); st != http.StatusOK || len(rr.Records) != 1 || rr.NextOffset != *pr.Records[2].Offset+1 {
		t.Fatalf("max=1: %d %+v", st, rr)
	}
	url = fmt.Sprintf("%s/v1/topics/orders/records?partition=2&offset=%d", srv.URL, rr.NextOffset)
	if st := do(t, "GET", url, "", nil, &rr); st != http.StatusOK || len(rr.Records) != 1 || rr.Records[0].Value != nil || rr.Records[0].Key != nil {
		t.Fatalf("null key and value: %d %+v", st, rr)
	}
}

func testIdempotencyKey(t *testing.T, e env) {
	e.createTopic(t, "pay", 2)
	srv, _ := serve(t, e.core(), Config{})
	body := `{"records": [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}, {"value": "3"}]}`
	hdr := map[string]string{"Idempotency-Key": "req-42"}
	var first, again produceResp
	if st := do(t, "POST", srv.URL+"/v1/topics/pay/records", body, hdr, &first); st != http.StatusOK {
		t.Fatalf("produce: %d %+v", st, first)
	}
	if st := do(t, "POST", srv.URL+"/v1/topics/pay/records", body, hdr, &again); st != http.StatusOK {
		t.Fatalf("retry: %d %+v", st, again)
	}
	for i := range first.Records {
		f, a := first.Records[i], again.Records[i]
		if f.Partition != a.Partition || *f.Offset != *a.Offset || !a.Duplicate || f.Duplicate {
			t.Fatalf("record %d: first %+v, retry %+v: want the same place, the retry marked duplicate", i, f, a)
		}
	}
	total := 0
	for p := range 2 {
		var rr readResp
		do(t, "GET", fmt.Sprintf("%s/v1/topics/pay/records?partition=%d", srv.URL, p), "", nil, &rr)
		total += len(rr.Records)
	}
	if total != 3 {
		t.Fatalf("%d records stored after a retry, want 3", total)
	}
	// Another key writes again.
	var other produceResp
	do(t, "POST", srv.URL+"/v1/topics/pay/records", body, map[string]string{"Idempotency-Key": "req-43"}, &other)
	if other.Records[0].Duplicate || *other.Records[0].Offset == *first.Records[0].Offset {
		t.Fatalf("a new key was answered as a duplicate: %+v", other.Records[0])
	}
}

func testBadRequests(t *testing.T, e env) {
	e.createTopic(t, "t", 2)
	srv, _ := serve(t, e.core(), Config{MaxBodyBytes: 1 << 10})
	post := srv.URL + "/v1/topics/t/records"
	cases := []struct {
		name, method, url, body string
		status                  int
		says                    string
	}{
		{"not json", "POST", post, `{"records": [`, 400, "want {"},
		{"wrong type", "POST", post, `{"records": {"value": 1}}`, 400, "records"},
		{"number value", "POST", post, `{"records": [{"value": 7}]}`, 400, "string"},
		{"unknown field", "POST", post, `{"records": [{"valeu": "x"}]}`, 400, "valeu"},
		{"no records", "POST", post, `{"records": []}`, 400, "no records"},
		{"two objects", "POST", post, `{"records": [{"value": "a"}]} {}`, 400, "one object"},
		{"bad base64", "POST", post, `{"records": [{"value": {"base64": "!!"}}]}`, 400, "base64"},
		{"negative partition", "POST", post, `{"records": [{"value": "a", "partition": -1}]}`, 400, "negative"},
		{"missing partition", "POST", post, `{"records": [{"value": "a"}, {"value": "b", "partition": 9}]}`, 404, "0 to 1"},
		{"too large", "POST", post, `{"records": [{"value": "` + strings.Repeat("x", 2<<10) + `"}]}`, 413, "fewer"},
		{"unknown topic", "POST", srv.URL + "/v1/topics/nope/records", `{"records": [{"value": "a"}]}`, 404, "nope"},
		{"bad acks", "POST", post + "?acks=some", `{"records": [{"value": "a"}]}`, 400, "acks"},
		{"describe unknown", "GET", srv.URL + "/v1/topics/nope", "", 404, "nope"},
		{"bad offset", "GET", srv.URL + "/v1/topics/t/records?offset=abc", "", 400, "offset"},
		{"negative offset", "GET", srv.URL + "/v1/topics/t/records?offset=-3", "", 400, "offset"},
		{"offset past the end", "GET", srv.URL + "/v1/topics/t/records?offset=50", "", 416, "0 to 0"},
		{"bad max", "GET", srv.URL + "/v1/topics/t/records?max=0", "", 400, "max"},
		{"bad partition", "GET", srv.URL + "/v1/topics/t/records?partition=x", "", 400, "partition"},
		{"wrong method", "DELETE", srv.URL + "/v1/topics/t/records", "", 405, "not allowed"},
		{"no endpoint", "GET", srv.URL + "/v1/nothing", "", 404, "docs/http.md"},
		{"bad from", "GET", srv.URL + "/v1/topics/t/events?from=yesterday", "", 400, "from"},
		{"bad event id", "GET", srv.URL + "/v1/topics/t/events?last_event_id=0:x", "", 400, "Last-Event-ID"},
		{"event id of another partition", "GET", srv.URL + "/v1/topics/t/events?partition=0&last_event_id=1:0", "", 400, "partition 1"},
		{"events of a missing partition", "GET", srv.URL + "/v1/topics/t/events?partition=5", "", 404, "partition"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var eb errorBody
			if st := do(t, c.method, c.url, c.body, nil, &eb); st != c.status || !strings.Contains(eb.Error, c.says) {
				t.Fatalf("%d %q, want %d saying %q", st, eb.Error, c.status, c.says)
			}
		})
	}
	// Nothing was written by any of them.
	for p := range 2 {
		var rr readResp
		do(t, "GET", fmt.Sprintf("%s/v1/topics/t/records?partition=%d", srv.URL, p), "", nil, &rr)
		if len(rr.Records) != 0 || rr.HighWatermark != 0 {
			t.Fatalf("partition %d holds %d records after failed requests", p, len(rr.Records))
		}
	}
}

func testTopicsEndpoints(t *testing.T, e env) {
	e.createTopic(t, "a", 1)
	e.createTopic(t, "b", 2)
	srv, _ := serve(t, e.core(), Config{})
	do(t, "POST", srv.URL+"/v1/topics/b/records", `{"records": [{"value": "x", "partition": 1}]}`, nil, nil)
	var list struct{ Topics []topicJSON }
	if st := do(t, "GET", srv.URL+"/v1/topics", "", nil, &list); st != 200 {
		t.Fatalf("list: %d", st)
	}
	names := map[string]topicJSON{}
	for _, tj := range list.Topics {
		names[tj.Name] = tj
	}
	if names["a"].Partitions != 1 || len(names["b"].PartitionInfo) != 2 {
		t.Fatalf("topics: %+v", list.Topics)
	}
	var b topicJSON
	if st := do(t, "GET", srv.URL+"/v1/topics/b", "", nil, &b); st != 200 || b.PartitionInfo[1].HighWatermark != 1 || b.PartitionInfo[0].HighWatermark != 0 {
		t.Fatalf("describe b: %d %+v", st, b)
	}
}

// TestProducePartlyNotLeader: records of a partition led elsewhere fail
// with 421 naming the leader; the others are written and answered.
func TestProducePartlyNotLeader(t *testing.T) {
	f := newFakeCore()
	f.addTopic("split", 2)
	f.notLeader = map[int32]broker.Node{1: {ID: "n2", HTTPAddr: "127.0.0.1:7171"}}
	srv, _ := serve(t, f, Config{})
	var pr struct {
		produceResp
		Leader *nodeJSON `json:"leader"`
	}
	st := do(t, "POST", srv.URL+"/v1/topics/split/records", `{"records": [{"value": "a", "partition": 0}, {"value": "b", "partition": 1}]}`, nil, &pr)
	if st != http.StatusMisdirectedRequest || pr.Leader == nil || pr.Leader.HTTPAddr != "127.0.0.1:7171" || !strings.Contains(pr.Error, "n2") {
		t.Fatalf("%d %+v, want 421 naming n2 at 127.0.0.1:7171", st, pr)
	}
	if r := pr.Records; r[0].Offset == nil || *r[0].Offset != 0 || r[1].Offset != nil || r[1].Error == "" {
		t.Fatalf("records %+v: want the first written at 0, the second failed", r)
	}
}
