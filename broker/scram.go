package broker

import (
	"context"
	"errors"
	"slices"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
)

// A user's SCRAM credentials one mechanism at a time, as Kafka's
// DescribeUserScramCredentials and AlterUserScramCredentials manage them;
// the same authorization as Users, CreateUser and DeleteUser. A change
// reads the user's credentials on this node and writes them whole through
// the metadata leader: two changes of one user at once may lose one.

// UserMechanisms is a user's SCRAM mechanisms with their iteration counts
// (salts and keys left out), ErrUnknownUser when there is no such user.
func (b *Broker) UserMechanisms(ctx context.Context, pr Principal, name string) ([]auth.ScramCredential, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Cluster()); err != nil {
		return nil, err
	}
	c, err := b.authStore.Lookup(name)
	if err != nil {
		return nil, err
	}
	out := make([]auth.ScramCredential, 0, len(c.Scram))
	for _, sc := range c.Scram {
		out = append(out, auth.ScramCredential{Mechanism: sc.Mechanism, Iterations: sc.Iterations})
	}
	return out, nil
}

// SetUserCredential stores one mechanism's credential of a user (made by
// auth.SaltedCredential), creating the user when there is none and
// keeping its other mechanism's credential.
func (b *Broker) SetUserCredential(ctx context.Context, pr Principal, name string, sc auth.ScramCredential) error {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
		return err
	}
	if err := b.disk.checkMetadata(); err != nil {
		return err
	}
	c, err := b.authStore.Lookup(name)
	if err != nil && !errors.Is(err, auth.ErrUnknownUser) {
		return err
	}
	c.Scram = slices.DeleteFunc(slices.Clone(c.Scram), func(o auth.ScramCredential) bool { return o.Mechanism == sc.Mechanism })
	c.Scram = append(c.Scram, sc)
	return b.authStore.putUser(ctx, name, c, true)
}

// DeleteUserCredential removes one mechanism's credential of a user
// (ErrUnknownUser when the user has none); the user goes with its last.
func (b *Broker) DeleteUserCredential(ctx context.Context, pr Principal, name string, m auth.Mechanism) error {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
		return err
	}
	c, err := b.authStore.Lookup(name)
	if err != nil {
		return err
	}
	if _, ok := c.For(m); !ok {
		return kind.Errorf(ErrUnknownUser, "user %q has no %s credential", name, m)
	}
	c.Scram = slices.DeleteFunc(slices.Clone(c.Scram), func(o auth.ScramCredential) bool { return o.Mechanism == m })
	if len(c.Scram) == 0 {
		return b.authStore.deleteUser(ctx, name)
	}
	return b.authStore.putUser(ctx, name, c, true)
}
