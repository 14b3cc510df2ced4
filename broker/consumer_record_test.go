package broker

import (
	"testing"
	"time"
)

// A consumer group's record keeps what a coordinator that takes the group
// over needs to serve its members alike: each member's regex and the
// principal it is resolved for (the principal of its last heartbeat).
func TestConsumerRecordKeepsRegexAndPrincipal(t *testing.T) {
	g := newCGroup("g")
	g.epoch, g.targetEpoch = 3, 3
	m := &cmember{id: "m", epoch: 3, prevEpoch: 2, principal: "User:eve", assigned: tpSet{{"a1", 0}: true}, revoking: tpSet{},
		rebalanceTimeout: time.Minute}
	m.setRegex("a.*")
	g.members["m"] = m
	g.target["m"] = tpSet{{"a1", 0}: true}
	got, err := decodeConsumerRecord("g", g.encodeLocked(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r := got.members["m"]
	if r == nil || r.principal != "User:eve" || r.regex != "a.*" || r.re == nil || !r.re.MatchString("a1") || r.re.MatchString("ba1") ||
		r.epoch != 3 || !r.assigned.equal(m.assigned) {
		t.Fatalf("member after the record's round trip: %+v, want principal User:eve, regex a.* and its epoch and assignment", r)
	}
}
