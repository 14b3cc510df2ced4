package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/offsets"
)

// brokerEnv is a real single-node broker on a temporary data directory.
type brokerEnv struct{ b *broker.Broker }

func newBrokerEnv(t *testing.T) env {
	t.Helper()
	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Fsync: broker.FsyncPolicy{Mode: broker.FsyncNever}})
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
	return brokerEnv{b}
}

func (e brokerEnv) core() Core { return e.b }

func (e brokerEnv) createTopic(t *testing.T, name string, n int) {
	t.Helper()
	cfg := broker.DefaultConfig(name)
	cfg.Partitions = int32(n)
	if _, err := e.b.CreateTopic(context.Background(), "", cfg); err != nil {
		t.Fatal(err)
	}
}

func TestE2EProduceAndRead(t *testing.T)       { testProduceAndRead(t, newBrokerEnv(t)) }
func TestE2EIdempotencyKey(t *testing.T)       { testIdempotencyKey(t, newBrokerEnv(t)) }
func TestE2EBadRequests(t *testing.T)          { testBadRequests(t, newBrokerEnv(t)) }
func TestE2ETopicsEndpoints(t *testing.T)      { testTopicsEndpoints(t, newBrokerEnv(t)) }
func TestE2EEventsResume(t *testing.T)         { testEventsResume(t, newBrokerEnv(t)) }
func TestE2EEventsResumeProperty(t *testing.T) { testEventsResumeProperty(t, newBrokerEnv(t)) }
func TestE2EEventsFrom(t *testing.T)           { testEventsFrom(t, newBrokerEnv(t)) }
func TestE2ESlowClientIsCut(t *testing.T)      { testEventsSlowClientIsCut(t, newBrokerEnv(t)) }
func TestE2EConsoleInBrowser(t *testing.T)     { testConsoleInBrowser(t, newBrokerEnv(t)) }
func TestE2EEventsGroupCommit(t *testing.T)    { testEventsGroupCommit(t, newBrokerEnv(t)) }

// TestE2EGroups: a group with committed offsets is listed and described
// with its lag.
func TestE2EGroups(t *testing.T) {
	e := newBrokerEnv(t).(brokerEnv)
	e.createTopic(t, "g", 1)
	srv, _ := serve(t, e.b, Config{})
	produceN(t, srv.URL, "g", 0, 5)
	if err := e.b.CommitOffsets(context.Background(), "", "billing", "", -1,
		[]offsets.Committed{{Topic: "g", Partition: 0, Offset: 2}}); err != nil {
		t.Fatal(err)
	}
	var list struct{ Groups []groupListingJSON }
	if st := do(t, "GET", srv.URL+"/v1/groups", "", nil, &list); st != 200 || len(list.Groups) != 1 || list.Groups[0].Group != "billing" {
		t.Fatalf("groups: %d %+v", st, list)
	}
	var g groupJSON
	if st := do(t, "GET", srv.URL+"/v1/groups/billing", "", nil, &g); st != 200 || g.Lag != 3 || len(g.Offsets) != 1 ||
		g.Offsets[0].Committed != 2 || g.Offsets[0].HighWatermark != 5 || g.State != groups.Empty.String() {
		t.Fatalf("describe: %d %+v", st, g)
	}
	var eb errorBody
	if st := do(t, "GET", srv.URL+"/v1/groups/nobody", "", nil, &eb); st != 404 {
		t.Fatalf("unknown group: %d %+v", st, eb)
	}
}

// TestE2EProduceOverBatchLimitStoresNothing: a request whose records for
// one partition encode over the broker's batch limit is refused whole
// (413): the other partition's records are not written either, so the
// request's retry cannot duplicate them.
func TestE2EProduceOverBatchLimitStoresNothing(t *testing.T) {
	e := newBrokerEnv(t).(brokerEnv)
	e.createTopic(t, "two", 2)
	srv, _ := serve(t, e.core(), Config{})
	body := `{"records": [{"value": "small", "partition": 0}, {"value": "` +
		strings.Repeat("v", e.b.MaxBatchBytes()) + `", "partition": 1}]}`
	var pr produceResp
	if st := do(t, "POST", srv.URL+"/v1/topics/two/records", body, nil, &pr); st != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d %+v, want 413", st, pr)
	}
	for id := range int32(2) {
		if hw := e.b.LocalHighWatermark("two", id); hw != 0 {
			t.Errorf("partition %d holds %d record(s) of a refused request", id, hw)
		}
	}
}
