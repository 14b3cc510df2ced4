package kafka

import (
	"context"
	"errors"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// The fake core's answers for the APIs of topic configs and the admin
// APIs added beside the first round's (fake_admin_test.go).

// fakeMaxBatchBytes is the fake node's bound on a batch (the broker's default).
const fakeMaxBatchBytes = 1 << 20

func (f *fakeCore) MaxBatchBytes() int { return fakeMaxBatchBytes }

// The fake core has no users (the SCRAM APIs are tested on the real core).
func (f *fakeCore) Users(context.Context, Principal) ([]string, error) { return nil, nil }

func (f *fakeCore) UserMechanisms(context.Context, Principal, string) ([]auth.ScramCredential, error) {
	return nil, auth.ErrUnknownUser
}

func (f *fakeCore) SetUserCredential(context.Context, Principal, string, auth.ScramCredential) error {
	return errors.New("the fake core stores no users")
}

func (f *fakeCore) DeleteUserCredential(context.Context, Principal, string, auth.Mechanism) error {
	return auth.ErrUnknownUser
}

// The fake core's one directory holds no replica.
func (f *fakeCore) LogDir(context.Context, Principal) (broker.LogDir, error) {
	return broker.LogDir{Path: "/fake", TotalBytes: -1, UsableBytes: -1}, nil
}
