package auth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdg-go/scram"
)

// scramAttempt runs one whole SCRAM exchange with client (no *testing.T:
// the flood runs it off the test goroutine).
func scramAttempt(a *Authenticator, m Mechanism, client *scram.Client) (Principal, error) {
	conv := client.NewConversation()
	x, err := a.Start(m, false)
	if err != nil {
		return Principal{}, err
	}
	msg, err := conv.Step("")
	for err == nil && !x.Done() {
		var resp []byte
		if resp, err = x.Step(context.Background(), []byte(msg)); err != nil {
			break
		}
		msg, err = conv.Step(string(resp))
	}
	if err != nil {
		return Principal{}, err
	}
	if p, ok := x.Principal(); ok {
		return p, nil
	}
	return Principal{}, errors.New("exchange done without a principal")
}

// startLoginFlood starts 8 goroutines that keep failing logins until
// stop returns: wrong PLAIN passwords for bob, an unknown user, and the
// bad SCRAM clients. Each attempt counts in failures; one that succeeds
// in wrongOK too.
func startLoginFlood(a *Authenticator, bad []*scram.Client, failures, wrongOK *atomic.Int64) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-quit:
					return
				default:
				}
				var err error
				switch i % 4 {
				case 0, 1:
					_, err = a.CheckPassword(context.Background(), "bob", "not-bob's")
				case 2:
					_, err = a.CheckPassword(context.Background(), "nobody", "x")
				default:
					_, err = scramAttempt(a, []Mechanism{ScramSHA256, ScramSHA512}[i/4], bad[i/4])
				}
				if err == nil {
					wrongOK.Add(1)
				}
				failures.Add(1)
			}
		}()
	}
	return func() { close(quit); wg.Wait() }
}

// A real flood: goroutines keep failing logins (wrong passwords for a
// real user with PLAIN, whose checks queue for the PasswordChecks slots
// and fill them, wrong SCRAM proofs, unknown users) while others log in.
// Every correct login goes through while the flood runs: SCRAM (no
// server-side derivation), a password the cache holds (the flood's wrong
// passwords for the same user neither evict it nor lock the user out),
// and a password not checked before, which queues for a slot in turn with
// the flood. No timing target: the generous timeout only turns a
// starvation or deadlock into a failure.
func TestFailedLoginFloodDoesNotStopOthers(t *testing.T) {
	a, store := newTestAuthenticator(t, AuthenticatorConfig{PasswordChecks: 2})
	putUser(t, store, "carol", "carol-secret")
	if _, err := a.CheckPassword(context.Background(), "bob", "bob-secret"); err != nil {
		t.Fatal(err) // now cached
	}
	// The clients are made on the test goroutine (testClient may t.Fatal).
	good := testClient(t, ScramSHA256, "alice", "alice-secret", "")
	bad := []*scram.Client{
		testClient(t, ScramSHA256, "alice", "wrong", ""),
		testClient(t, ScramSHA512, "mallory", "x", ""),
	}

	var failures, wrongOK atomic.Int64
	stop := startLoginFlood(a, bad, &failures, &wrongOK)
	defer stop()

	// The flood is under way (every slot has been taken several times)
	// before the correct logins start.
	deadline := time.Now().Add(time.Minute)
	for failures.Load() < 10 {
		if time.Now().After(deadline) {
			t.Fatal("the flood made no attempts")
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan error, 1)
	go func() {
		for range 3 {
			if p, err := scramAttempt(a, ScramSHA256, good); err != nil || p != User("alice") {
				done <- errors.Join(errors.New("SCRAM alice"), err)
				return
			}
			if _, err := a.CheckPassword(context.Background(), "bob", "bob-secret"); err != nil {
				done <- errors.Join(errors.New("cached bob"), err)
				return
			}
		}
		_, err := a.CheckPassword(context.Background(), "carol", "carol-secret")
		done <- errors.Join(err)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a correct login during the flood: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("correct logins did not get through a flood of %d failures", failures.Load())
	}
	before := failures.Load()
	for failures.Load() == before { // the flood was still running at the end
		if time.Now().After(deadline) {
			t.Fatal("the flood stopped before the correct logins ended")
		}
		time.Sleep(time.Millisecond)
	}
	if n := wrongOK.Load(); n != 0 {
		t.Fatalf("%d wrong logins succeeded", n)
	}
}
