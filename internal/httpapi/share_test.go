package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
)

type shareFetchOut struct {
	Records []struct {
		Partition     int32  `json:"partition"`
		Offset        int64  `json:"offset"`
		Value         string `json:"value"`
		DeliveryCount int    `json:"delivery_count"`
	} `json:"records"`
	LockDeadline string `json:"lock_deadline"`
}

// Pull with explicit acknowledgement: fetch, accept one, release one (it
// comes again, delivery 2), reject it; then nothing is left.
func TestE2EShareFetchAck(t *testing.T) {
	url := kvEnv(t) + "/v1/topics/plain/share/g/"
	var out shareFetchOut
	if st := do(t, "POST", url+"fetch", `{"member": "w1"}`, nil, &out); st != http.StatusOK || len(out.Records) != 0 {
		t.Fatalf("first fetch (starts the group at the end): %d %+v", st, out)
	}
	if st := do(t, "POST", kvEnv2(url)+"records", `{"records": [{"value": "a"}, {"value": "b"}]}`, nil, nil); st != http.StatusOK {
		t.Fatalf("produce: %d", st)
	}
	if st := do(t, "POST", url+"fetch", `{"member": "w1", "max_records": 10, "wait_ms": 5000}`, nil, &out); st != http.StatusOK ||
		len(out.Records) != 2 || out.Records[0].Value != "a" || out.Records[0].DeliveryCount != 1 || out.LockDeadline == "" {
		t.Fatalf("fetch: %d %+v", st, out)
	}
	a, b := out.Records[0].Offset, out.Records[1].Offset
	var ack struct {
		NotApplied []shareNotApplied `json:"not_applied"`
	}
	body := `{"member": "w1", "accept": [{"partition": 0, "offset": ` + itoa(a) + `}], "release": [{"partition": 0, "offset": ` + itoa(b) + `}]}`
	if st := do(t, "POST", url+"ack", body, nil, &ack); st != http.StatusOK || len(ack.NotApplied) != 0 {
		t.Fatalf("ack: %d %+v", st, ack)
	}
	if st := do(t, "POST", url+"ack", body, nil, &ack); st != http.StatusOK || len(ack.NotApplied) != 1 {
		t.Fatalf("ack again: %d %+v, want not applied", st, ack)
	}
	if st := do(t, "POST", url+"fetch", `{"member": "w2", "wait_ms": 5000}`, nil, &out); st != http.StatusOK ||
		len(out.Records) != 1 || out.Records[0].Value != "b" || out.Records[0].DeliveryCount != 2 {
		t.Fatalf("fetch of the released record: %d %+v", st, out)
	}
	if st := do(t, "POST", url+"ack", `{"member": "w2", "reject": [{"partition": 0, "offset": `+itoa(b)+`}]}`, nil, &ack); st != http.StatusOK || len(ack.NotApplied) != 0 {
		t.Fatalf("reject: %d %+v", st, ack)
	}
	if st := do(t, "POST", url+"fetch", `{"member": "w1"}`, nil, &out); st != http.StatusOK || len(out.Records) != 0 {
		t.Fatalf("after accept and reject: %d %+v, want nothing", st, out)
	}
}

func kvEnv2(shareURL string) string { return strings.TrimSuffix(shareURL, "share/g/") }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Bad input is 400 with what to send; a principal without READ on the
// group is 403.
func TestE2EShareBadInputAndRefused(t *testing.T) {
	url := kvEnv(t) + "/v1/topics/plain/share/g/"
	for _, c := range []struct{ path, body, want string }{
		{"fetch", `{}`, "member"},
		{"fetch", `not json`, "JSON"},
		{"fetch", `{"member": "m", "max_records": -1}`, "max_records"},
		{"fetch", `{"member": "m", "wait_ms": 99999999}`, "wait_ms"},
		{"fetch", `{"member": "m", "bogus": 1}`, "bogus"},
		{"ack", `{"member": "m"}`, "nothing to acknowledge"},
		{"ack", `{"member": "m", "accept": [{"partition": 0, "offset": 1}], "reject": [{"partition": 0, "offset": 1}]}`, "twice"},
		{"ack", `{"member": "m", "accept": [{"partition": -1, "offset": 1}]}`, "0 or more"},
	} {
		var e struct {
			Error string `json:"error"`
		}
		if st := do(t, "POST", url+c.path, c.body, nil, &e); st != http.StatusBadRequest || !strings.Contains(e.Error, c.want) {
			t.Errorf("%s %s: %d %q, want 400 naming %q", c.path, c.body, st, e.Error, c.want)
		}
	}

	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Fsync: broker.FsyncPolicy{Mode: broker.FsyncNever},
		Auth: broker.AuthConfig{Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")}}})
	if err != nil {
		t.Fatal(err)
	}
	b.Ready(broker.Node{APIAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2"})
	t.Cleanup(func() {
		b.Shutdown()
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	c := broker.DefaultConfig("t")
	c.Partitions = 1
	if _, err := b.CreateTopic(context.Background(), "User:admin", c); err != nil {
		t.Fatal(err)
	}
	srv, _ := serve(t, b.AnyNode(), Config{Principal: func(r *http.Request) broker.Principal {
		return broker.Principal(r.Header.Get("X-Test-Principal"))
	}})
	hdr := map[string]string{"X-Test-Principal": "User:alice"}
	for _, path := range []string{"fetch", "ack"} {
		body := `{"member": "m", "reject": [{"partition": 0, "offset": 0, "reason": "bad"}]}`
		if path == "fetch" {
			body = `{"member": "m"}`
		}
		if st := do(t, "POST", srv.URL+"/v1/topics/t/share/g/"+path, body, hdr, nil); st != http.StatusForbidden {
			t.Errorf("alice %s: %d, want 403", path, st)
		}
	}
	if st := do(t, "POST", srv.URL+"/v1/topics/t/share/g/fetch", `{"member": "m"}`, map[string]string{"X-Test-Principal": "User:admin"}, nil); st != http.StatusOK {
		t.Errorf("admin fetch: %d, want 200", st)
	}
}

// A reject's reason ends up, cut to broker.MaxShareReasonBytes at a
// character boundary, in the record's dead letter as logd.dlq.error; a
// reason with an accept is 400.
func TestE2EShareRejectReason(t *testing.T) {
	e := newBrokerEnv(t).(brokerEnv)
	e.createTopic(t, "jobs", 1)
	srv, _ := serve(t, e.b.AnyNode(), Config{})
	url := srv.URL + "/v1/topics/jobs/share/g/"
	do(t, "POST", url+"fetch", `{"member": "w1"}`, nil, nil) // starts the group at the end
	if st := do(t, "POST", srv.URL+"/v1/topics/jobs/records", `{"records": [{"value": "a"}, {"value": "b"}]}`, nil, nil); st != http.StatusOK {
		t.Fatalf("produce: %d", st)
	}
	var out shareFetchOut
	if st := do(t, "POST", url+"fetch", `{"member": "w1", "max_records": 10, "wait_ms": 5000}`, nil, &out); st != http.StatusOK || len(out.Records) != 2 {
		t.Fatalf("fetch: %d %+v", st, out)
	}
	var e400 struct {
		Error string `json:"error"`
	}
	if st := do(t, "POST", url+"ack", `{"member": "w1", "accept": [{"partition": 0, "offset": 0, "reason": "x"}]}`, nil, &e400); st != http.StatusBadRequest ||
		!strings.Contains(e400.Error, "reject only") {
		t.Fatalf("a reason with an accept: %d %q, want 400", st, e400.Error)
	}
	long := strings.Repeat("€", broker.MaxShareReasonBytes) // 3 bytes each
	body := `{"member": "w1", "reject": [{"partition": 0, "offset": 0, "reason": "timeout talking to billing"}, {"partition": 0, "offset": 1, "reason": "` + long + `"}]}`
	var ack struct {
		NotApplied []shareNotApplied `json:"not_applied"`
	}
	if st := do(t, "POST", url+"ack", body, nil, &ack); st != http.StatusOK || len(ack.NotApplied) != 0 {
		t.Fatalf("reject: %d %+v", st, ack)
	}
	res, err := e.b.Fetch(context.Background(), broker.FetchRequest{Partitions: []broker.FetchPartition{{Topic: "jobs.dlq"}}})
	if err != nil || len(res.Partitions) != 1 || res.Partitions[0].Err != nil {
		t.Fatalf("fetch jobs.dlq: %+v %v", res, err)
	}
	defer res.Release()
	var errs []string
	err = batch.Split(res.Partitions[0].Batches, func(one []byte, _ batch.Info) error {
		_, recs, err := batch.Decode(one, 0)
		for _, r := range recs {
			for _, h := range r.Headers {
				if h.Key == broker.DLQHeaderError {
					errs = append(errs, string(h.Value))
				}
			}
		}
		return err
	})
	if err != nil || len(errs) != 2 {
		t.Fatalf("jobs.dlq's errors: %q %v, want 2", errs, err)
	}
	if errs[0] != "timeout talking to billing" {
		t.Errorf("first dead letter's error %q", errs[0])
	}
	if want := long[:broker.MaxShareReasonBytes-broker.MaxShareReasonBytes%3]; errs[1] != want || !utf8.ValidString(errs[1]) {
		t.Errorf("the long reason came as %d bytes (valid UTF-8 %v), want its first %d", len(errs[1]), utf8.ValidString(errs[1]), len(want))
	}
}
