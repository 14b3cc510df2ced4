package kind

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorfIsOfItsKind(t *testing.T) {
	err := Errorf(ErrUnavailable, "node %s is catching up: retry", "n2")
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("%v: want of kind unavailable only", err)
	}
	if got, want := err.Error(), "node n2 is catching up: retry"; got != want {
		t.Fatalf("message %q, want %q (without the kind's name)", got, want)
	}
}

func TestOfIsTheClosedSet(t *testing.T) {
	for _, k := range Kinds {
		for _, err := range []error{k, Errorf(k, "x"), fmt.Errorf("wrapped: %w", k)} {
			if got := Of(err); got != k {
				t.Errorf("Of(%v) = %v, want %v", err, got, k)
			}
		}
	}
	for _, err := range []error{nil, errors.New("other"), Errorf(errors.New("a sentinel"), "x")} {
		if got := Of(err); got != nil {
			t.Errorf("Of(%v) = %v, want nil", err, got)
		}
	}
}
