package torture

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A Kafka commit is stored only when its partition is answered without an
// error; the group's refusals of the member or its generation store
// nothing; anything else may have been stored.
func TestKafkaCommitOutcome(t *testing.T) {
	for _, c := range []struct {
		err      error
		code     int16
		answered bool
		want     Outcome
	}{
		{nil, 0, true, OutcomeOK},
		{nil, kerr.IllegalGeneration.Code, true, OutcomeFail},
		{nil, kerr.UnknownMemberID.Code, true, OutcomeFail},
		{nil, kerr.RebalanceInProgress.Code, true, OutcomeFail},
		{nil, kerr.StaleMemberEpoch.Code, true, OutcomeFail},
		{nil, kerr.FencedMemberEpoch.Code, true, OutcomeFail},
		{nil, kerr.NotCoordinator.Code, true, OutcomeUnknown},
		{nil, kerr.RequestTimedOut.Code, true, OutcomeUnknown},
		{nil, 0, false, OutcomeUnknown},
		{context.DeadlineExceeded, 0, false, OutcomeUnknown},
		{kerr.IllegalGeneration, 0, false, OutcomeFail},
	} {
		if got, _ := kafkaCommitOutcome(c.err, c.code, c.answered); got != c.want {
			t.Errorf("err %v, code %d, answered %v: %s, want %s", c.err, c.code, c.answered, got, c.want)
		}
	}
}
