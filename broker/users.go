package broker

import (
	"context"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
)

// Users and ACLs, managed by a principal: alter on the cluster to change
// them, describe on the cluster to list them. In a cluster, writes run on
// the metadata leader (others answer *NotLeaderError, Untouched).

// CreateUser stores a user's SCRAM credentials, derived from password
// (auth.NewCredentials: SCRAM-SHA-256 and -512, 4096 iterations). An
// existing user is ErrUserExists unless replace (a password change).
func (b *Broker) CreateUser(ctx context.Context, pr Principal, name, password string, replace bool) error {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
		return err
	}
	if err := auth.ValidateUserName(name); err != nil {
		return kind.Errorf(kind.ErrInvalidArgument, "user %q: %v", name, err)
	}
	if password == "" {
		return kind.Errorf(kind.ErrInvalidArgument, "user %q: the password is empty", name)
	}
	if err := b.disk.checkMetadata(); err != nil {
		return err
	}
	// A node that does not lead the metadata answers before deriving.
	if err := b.plane.onMetaLeader(); err != nil {
		return err
	}
	c, err := auth.NewCredentials(password, auth.DefaultIterations)
	if err != nil {
		return kind.Errorf(kind.ErrInvalidArgument, "user %q: %v", name, err)
	}
	return b.authStore.putUser(ctx, name, c, replace)
}

// DeleteUser removes a user (ErrUnknownUser when there is none): its next
// login fails, and so does an exchange in progress.
func (b *Broker) DeleteUser(ctx context.Context, pr Principal, name string) error {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
		return err
	}
	return b.authStore.deleteUser(ctx, name)
}

// Users lists the user names, sorted (this node's applied metadata).
func (b *Broker) Users(ctx context.Context, pr Principal) ([]string, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Cluster()); err != nil {
		return nil, err
	}
	return b.authStore.Users()
}

// AddACLs stores ACLs, all or none; each is validated first (an operation
// that does not apply to the resource type is refused, as in Kafka).
func (b *Broker) AddACLs(ctx context.Context, pr Principal, acls ...auth.ACL) error {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
		return err
	}
	for _, a := range acls {
		if err := a.Validate(); err != nil {
			return kind.Errorf(kind.ErrInvalidArgument, "%v", err)
		}
	}
	if err := b.disk.checkMetadata(); err != nil {
		return err
	}
	return b.authStore.addACLs(ctx, acls)
}

// RemoveACLs deletes the ACLs f matches and returns them (none: no error).
func (b *Broker) RemoveACLs(ctx context.Context, pr Principal, f auth.ACLFilter) ([]auth.ACL, error) {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
		return nil, err
	}
	return b.authStore.removeACLs(ctx, f)
}

// ListACLs returns the ACLs f matches, sorted.
func (b *Broker) ListACLs(ctx context.Context, pr Principal, f auth.ACLFilter) ([]auth.ACL, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Cluster()); err != nil {
		return nil, err
	}
	return b.authStore.List(f)
}
