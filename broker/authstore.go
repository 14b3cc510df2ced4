package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
)

// authStore is the node's users and ACLs: auth.CredentialStore and
// auth.ACLStore over the control plane's (the cluster metadata's,
// meta.AuthState, replicated: a write runs on the metadata leader, others
// answer *NotLeaderError with Untouched; or, on a node that runs alone,
// its Pebble store's: controlplane_local.go). Reads are local and take no
// Raft round. The ACL index is rebuilt when the ACLs' generation changes.
type authStore struct {
	cp     controlPlane
	logger *slog.Logger

	idx atomic.Pointer[indexAt]
}

// indexAt is an ACL index and the generation it was built at.
type indexAt struct {
	gen uint64
	x   *auth.ACLIndex
}

// authWriteTimeout bounds a store write that has no context of its own
// (the auth.CredentialStore and auth.ACLStore methods).
const authWriteTimeout = 10 * time.Second

var (
	_ auth.CredentialStore = (*authStore)(nil)
	_ auth.ACLStore        = (*authStore)(nil)
)

// Lookup implements auth.CredentialStore: local state, no Raft.
func (s *authStore) Lookup(user string) (auth.Credentials, error) {
	b, ok := s.cp.user(user)
	if !ok {
		return auth.Credentials{}, fmt.Errorf("%w %q", auth.ErrUnknownUser, user)
	}
	return auth.DecodeCredentials(b)
}

// Users implements auth.CredentialStore.
func (s *authStore) Users() ([]string, error) {
	return s.cp.users(), nil
}

// Put implements auth.CredentialStore (create or replace).
func (s *authStore) Put(user string, c auth.Credentials) error {
	ctx, cancel := context.WithTimeout(context.Background(), authWriteTimeout)
	defer cancel()
	return s.putUser(ctx, user, c, true)
}

// Delete implements auth.CredentialStore.
func (s *authStore) Delete(user string) error {
	ctx, cancel := context.WithTimeout(context.Background(), authWriteTimeout)
	defer cancel()
	return s.deleteUser(ctx, user)
}

// errUserExists is the answer to creating a user that exists.
func errUserExists(user string) error {
	return kind.Errorf(ErrUserExists, "user %q exists (change its password with `logd user create --update`)", user)
}

// errUnknownUser is the answer to deleting a user that does not exist.
func errUnknownUser(user string) error {
	return fmt.Errorf("%w %q (see `logd user list`)", auth.ErrUnknownUser, user)
}

// putUser stores a user's credentials; replace false refuses an existing
// user.
func (s *authStore) putUser(ctx context.Context, user string, c auth.Credentials, replace bool) error {
	if err := auth.ValidateUserName(user); err != nil {
		return kind.Errorf(kind.ErrInvalidArgument, "user %q: %v", user, err)
	}
	enc, err := c.MarshalBinary()
	if err != nil {
		return kind.Errorf(kind.ErrInvalidArgument, "user %q: %v", user, err)
	}
	return s.cp.putUser(ctx, user, enc, replace)
}

func (s *authStore) deleteUser(ctx context.Context, user string) error {
	return s.cp.deleteUser(ctx, user)
}

// Index implements auth.ACLSource: the index of the current ACLs, rebuilt
// when they changed. A stored ACL that does not decode is logged and left
// out (it allows nothing; a deny it held is lost, which the log says).
func (s *authStore) Index() *auth.ACLIndex {
	if cur := s.idx.Load(); cur != nil && cur.gen == s.cp.aclGen() {
		return cur.x
	}
	gen, enc := s.cp.acls()
	acls := make([]auth.ACL, 0, len(enc))
	for _, b := range enc {
		a, err := auth.DecodeACL(b)
		if err != nil {
			s.logger.Error("a stored ACL does not decode: left out of authorization", "err", err)
			continue
		}
		acls = append(acls, a)
	}
	x := &indexAt{gen: gen, x: auth.NewACLIndex(acls)}
	s.idx.Store(x)
	return x.x
}

// Add implements auth.ACLStore.
func (s *authStore) Add(acls ...auth.ACL) error {
	ctx, cancel := context.WithTimeout(context.Background(), authWriteTimeout)
	defer cancel()
	return s.addACLs(ctx, acls)
}

// Remove implements auth.ACLStore.
func (s *authStore) Remove(f auth.ACLFilter) ([]auth.ACL, error) {
	ctx, cancel := context.WithTimeout(context.Background(), authWriteTimeout)
	defer cancel()
	return s.removeACLs(ctx, f)
}

// List implements auth.ACLStore.
func (s *authStore) List(f auth.ACLFilter) ([]auth.ACL, error) {
	var out []auth.ACL
	for _, a := range s.Index().ACLs() {
		if f.Matches(a) {
			out = append(out, a)
		}
	}
	auth.SortACLs(out)
	return out, nil
}

func (s *authStore) addACLs(ctx context.Context, acls []auth.ACL) error {
	if len(acls) == 0 {
		return kind.Errorf(kind.ErrInvalidArgument, "add ACLs: no ACL given")
	}
	enc := make([][]byte, len(acls))
	for i, a := range acls {
		b, err := a.MarshalBinary()
		if err != nil {
			return kind.Errorf(kind.ErrInvalidArgument, "ACL %v: %v", a, err)
		}
		enc[i] = b
	}
	return s.cp.addACLs(ctx, enc)
}

// removeACLs deletes the ACLs f matches, as the store holds them when the
// write runs (in a cluster on the metadata leader, after its barrier).
func (s *authStore) removeACLs(ctx context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	var removed []auth.ACL
	match := func(all [][]byte) [][]byte {
		var enc [][]byte
		removed = nil
		for _, b := range all {
			if a, err := auth.DecodeACL(b); err == nil && f.Matches(a) {
				enc = append(enc, b)
				removed = append(removed, a)
			}
		}
		return enc
	}
	err := s.cp.removeACLs(ctx, match)
	if errors.Is(err, errNoACLMatch) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	auth.SortACLs(removed)
	return removed, nil
}
