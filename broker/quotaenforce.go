package broker

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// quotaState enforces the client quotas on this node: an index of the
// stored quotas, rebuilt when their generation changes, and a rate
// sensor per holder of a quota. Each node counts the bytes it serves
// itself, as each Kafka broker does.
type quotaState struct {
	idx     atomic.Pointer[quotaIndex]
	mu      sync.Mutex
	sensors map[sensorKey]int64 // the sensor's theoretical arrival time, Unix ns
}

// quotaWindow is the burst a quota allows (a second of its rate) and
// maxQuotaThrottle the longest throttle answered: bytes past it are not
// counted, so a client that ignores its throttle is not shut out for
// longer (Kafka bounds its throttle by its quota window likewise).
const (
	quotaWindow      = time.Second
	maxQuotaThrottle = 10 * time.Second
	// maxIdleSensors: past this many sensors, the idle ones are dropped.
	maxIdleSensors = 4096
)

// quotaEnt is a QuotaEntity as the index keys it.
type quotaEnt struct {
	hasUser, userDefault     bool
	user                     string
	hasClient, clientDefault bool
	client                   string
}

type quotaIndex struct {
	gen  uint64
	ents map[quotaEnt]map[string]float64
}

// sensorKey is whose bytes one sensor counts: the user and client id of
// the quota entity that applies (empty for a part it does not name: a
// quota of every user's default client id is shared by each user's
// clients), and which way.
type sensorKey struct {
	produce      bool
	user, client string
}

func (q *quotaState) index(cp controlPlane) *quotaIndex {
	gen := cp.aclGen()
	if cur := q.idx.Load(); cur != nil && cur.gen == gen {
		return cur
	}
	gen, qs := cp.quotas()
	x := &quotaIndex{gen: gen, ents: make(map[quotaEnt]map[string]float64, len(qs))}
	for k, vs := range qs {
		e, err := parseQuotaKey(k)
		if err != nil {
			continue
		}
		var qe quotaEnt
		for _, p := range e {
			if p.Type == QuotaUser {
				qe.hasUser, qe.userDefault, qe.user = true, p.Default, p.Name
			} else {
				qe.hasClient, qe.clientDefault, qe.client = true, p.Default, p.Name
			}
		}
		x.ents[qe] = vs
	}
	q.idx.Store(x)
	return x
}

// resolve finds the quota value name of user's client in Kafka's order of
// precedence: the user's client id, the user's default client id, the
// user, the default user's client id, its default client id, the default
// user, the client id, the default client id.
func (x *quotaIndex) resolve(user, client, name string) (rate float64, who sensorKey, ok bool) {
	type cand struct {
		e            quotaEnt
		user, client bool // the sensor is per user, per client id
	}
	for _, c := range [...]cand{
		{quotaEnt{hasUser: true, user: user, hasClient: true, client: client}, true, true},
		{quotaEnt{hasUser: true, user: user, hasClient: true, clientDefault: true}, true, true},
		{quotaEnt{hasUser: true, user: user}, true, false},
		{quotaEnt{hasUser: true, userDefault: true, hasClient: true, client: client}, true, true},
		{quotaEnt{hasUser: true, userDefault: true, hasClient: true, clientDefault: true}, true, true},
		{quotaEnt{hasUser: true, userDefault: true}, true, false},
		{quotaEnt{hasClient: true, client: client}, false, true},
		{quotaEnt{hasClient: true, clientDefault: true}, false, true},
	} {
		if v, found := x.ents[c.e][name]; found && v > 0 {
			if c.user {
				who.user = user
			}
			if c.client {
				who.client = client
			}
			return v, who, true
		}
	}
	return 0, who, false
}

// QuotaThrottle counts n bytes produced (or fetched) by the principal's
// client and returns how long the client is to wait before its next
// request, 0 while it is within its quota (Kafka's throttle_time_ms). A
// node without quotas answers 0 at once.
func (b *Broker) QuotaThrottle(pr Principal, clientID string, produce bool, n int) time.Duration {
	x := b.quotas.index(b.plane)
	if len(x.ents) == 0 || n <= 0 {
		return 0
	}
	name := QuotaConsumerByteRate
	if produce {
		name = QuotaProducerByteRate
	}
	rate, who, ok := x.resolve(quotaUser(pr), clientID, name)
	if !ok {
		return 0
	}
	who.produce = produce
	return b.quotas.record(who, rate, n, time.Now())
}

// quotaUser is the user name quotas know a principal by: its name
// ("User:alice" is alice), ANONYMOUS for no one, as in Kafka.
func quotaUser(pr Principal) string {
	if pr == "" {
		return "ANONYMOUS"
	}
	if _, name, ok := strings.Cut(string(pr), ":"); ok {
		return name
	}
	return string(pr)
}

// record adds n bytes to who's sensor at rate bytes per second: its
// theoretical arrival time moves n/rate on from now (or from where it
// was, when ahead); the throttle is how far it is past one window ahead.
func (q *quotaState) record(who sensorKey, rate float64, n int, now time.Time) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.sensors == nil {
		q.sensors = map[sensorKey]int64{}
	}
	nowNs := now.UnixNano()
	if len(q.sensors) > maxIdleSensors {
		for k, tat := range q.sensors {
			if tat < nowNs {
				delete(q.sensors, k)
			}
		}
	}
	tat := max(q.sensors[who], nowNs)
	limit := int64(quotaWindow + maxQuotaThrottle)
	tat = min(tat+int64(min(float64(n)/rate*float64(time.Second), float64(limit))), nowNs+limit)
	q.sensors[who] = tat
	return max(0, time.Duration(tat-nowNs)-quotaWindow)
}
