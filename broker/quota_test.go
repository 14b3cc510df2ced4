package broker

import (
	"testing"
	"time"
)

// A client's quota is the first of Kafka's order of precedence that sets
// the value, and its sensor is shared as that entity says.
func TestQuotaResolvePrecedence(t *testing.T) {
	x := &quotaIndex{ents: map[quotaEnt]map[string]float64{}}
	set := func(e quotaEnt, v float64) { x.ents[e] = map[string]float64{QuotaProducerByteRate: v} }
	check := func(user, client string, want float64, wantWho sensorKey) {
		t.Helper()
		v, who, ok := x.resolve(user, client, QuotaProducerByteRate)
		if want == 0 && ok || want != 0 && (!ok || v != want || who != wantWho) {
			t.Fatalf("%s/%s: %v %+v %v, want %v %+v", user, client, v, who, ok, want, wantWho)
		}
	}
	check("alice", "c", 0, sensorKey{})
	set(quotaEnt{hasClient: true, clientDefault: true}, 8)
	check("alice", "c", 8, sensorKey{client: "c"})
	set(quotaEnt{hasClient: true, client: "c"}, 7)
	check("alice", "c", 7, sensorKey{client: "c"})
	set(quotaEnt{hasUser: true, userDefault: true}, 6)
	check("alice", "c", 6, sensorKey{user: "alice"})
	set(quotaEnt{hasUser: true, userDefault: true, hasClient: true, clientDefault: true}, 5)
	check("alice", "c", 5, sensorKey{user: "alice", client: "c"})
	set(quotaEnt{hasUser: true, user: "alice"}, 3)
	check("alice", "c", 3, sensorKey{user: "alice"})
	check("bob", "c", 5, sensorKey{user: "bob", client: "c"})
	set(quotaEnt{hasUser: true, user: "alice", hasClient: true, client: "c"}, 1)
	check("alice", "c", 1, sensorKey{user: "alice", client: "c"})
	if _, _, ok := x.resolve("alice", "c", QuotaConsumerByteRate); ok {
		t.Fatal("a consumer rate nobody set applies")
	}
}

// The throttle is the time a sensor is past one window of its rate.
func TestQuotaRecordThrottle(t *testing.T) {
	var q quotaState
	now := time.Unix(100, 0)
	who := sensorKey{user: "u"}
	if th := q.record(who, 1000, 1000, now); th != 0 {
		t.Fatalf("one second's worth: throttle %v, want 0", th)
	}
	if th := q.record(who, 1000, 2000, now); th != 2*time.Second {
		t.Fatalf("three seconds' worth at once: throttle %v, want 2s", th)
	}
	if th := q.record(who, 1000, 1000, now.Add(10*time.Second)); th != 0 {
		t.Fatalf("after the debt is paid: throttle %v, want 0", th)
	}
	if th := q.record(who, 1e-300, 1<<30, now.Add(20*time.Second)); th != maxQuotaThrottle {
		t.Fatalf("a huge debt: throttle %v, want the cap %v", th, maxQuotaThrottle)
	}
}
