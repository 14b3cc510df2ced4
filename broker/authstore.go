package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/replication/meta"
)

// authStore is the node's users and ACLs: auth.CredentialStore and
// auth.ACLStore over the cluster metadata (meta.AuthState, replicated: a
// write runs on the metadata leader, others answer *NotLeaderError with
// Untouched) or, on a node that runs alone, over its Pebble store, where
// topics live too: keys "auth/user/<name>" (value: the encoded
// credentials) and "auth/acl/<encoded ACL>" (empty value), written with
// sync and mirrored in memory. Reads are local and take no Raft round.
// The ACL index is rebuilt when the ACLs' generation changes.
type authStore struct {
	b *Broker

	mu    sync.Mutex        // single node: serializes writes
	users map[string][]byte // single node
	acls  [][]byte          // single node: sorted, unique
	gen   atomic.Uint64     // single node: counts changes

	idx atomic.Pointer[indexAt]
}

// indexAt is an ACL index and the generation it was built at.
type indexAt struct {
	gen uint64
	x   *auth.ACLIndex
}

const (
	userKeyPrefix = "auth/user/"
	aclKeyPrefix  = "auth/acl/"
)

// authWriteTimeout bounds a store write that has no context of its own
// (the auth.CredentialStore and auth.ACLStore methods).
const authWriteTimeout = 10 * time.Second

var (
	_ auth.CredentialStore = (*authStore)(nil)
	_ auth.ACLStore        = (*authStore)(nil)
)

func newAuthStore(b *Broker) (*authStore, error) {
	s := &authStore{b: b, users: map[string][]byte{}}
	if b.cl != nil {
		return s, nil
	}
	if err := s.load(); err != nil {
		return nil, fmt.Errorf("load users and ACLs from %s/meta: %w", b.cfg.DataDir, err)
	}
	return s, nil
}

// load reads a single node's users and ACLs from Pebble.
func (s *authStore) load() error {
	for _, pre := range []string{userKeyPrefix, aclKeyPrefix} {
		it, err := s.b.db.NewIter(&pebble.IterOptions{LowerBound: []byte(pre), UpperBound: prefixEnd(pre)})
		if err != nil {
			return err
		}
		for it.First(); it.Valid(); it.Next() {
			rest := bytes.Clone(it.Key()[len(pre):])
			if pre == userKeyPrefix {
				s.users[string(rest)] = bytes.Clone(it.Value())
			} else {
				s.acls = append(s.acls, rest)
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return err
		}
	}
	return nil
}

// prefixEnd is the least key above every key with prefix pre.
func prefixEnd(pre string) []byte {
	b := []byte(pre)
	b[len(b)-1]++
	return b
}

// Lookup implements auth.CredentialStore: local state, no Raft.
func (s *authStore) Lookup(user string) (auth.Credentials, error) {
	var b []byte
	var ok bool
	if s.b.cl != nil {
		b, ok = s.b.cl.Auth().User(user)
	} else {
		s.mu.Lock()
		b, ok = s.users[user]
		s.mu.Unlock()
	}
	if !ok {
		return auth.Credentials{}, fmt.Errorf("%w %q", auth.ErrUnknownUser, user)
	}
	return auth.DecodeCredentials(b)
}

// Users implements auth.CredentialStore.
func (s *authStore) Users() ([]string, error) {
	if s.b.cl != nil {
		return s.b.cl.Auth().Users(), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.users))
	for u := range s.users {
		out = append(out, u)
	}
	slices.Sort(out)
	return out, nil
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
	if s.b.cl != nil {
		cmd := &meta.Command{Op: meta.OpPutUser, Name: user, Value: enc}
		return s.b.cl.ApplyAuth(ctx, cmd, func(f *meta.FSM) error {
			if _, ok := f.User(user); ok && !replace {
				return errUserExists(user)
			}
			return nil
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[user]; ok && !replace {
		return errUserExists(user)
	}
	if err := s.b.db.Set([]byte(userKeyPrefix+user), enc, pebble.Sync); err != nil {
		return err
	}
	s.users[user] = enc
	s.gen.Add(1)
	return nil
}

func (s *authStore) deleteUser(ctx context.Context, user string) error {
	unknown := fmt.Errorf("%w %q (see `logd user list`)", auth.ErrUnknownUser, user)
	if s.b.cl != nil {
		return s.b.cl.ApplyAuth(ctx, &meta.Command{Op: meta.OpDeleteUser, Name: user}, func(f *meta.FSM) error {
			if _, ok := f.User(user); !ok {
				return unknown
			}
			return nil
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[user]; !ok {
		return unknown
	}
	if err := s.b.db.Delete([]byte(userKeyPrefix+user), pebble.Sync); err != nil {
		return err
	}
	delete(s.users, user)
	s.gen.Add(1)
	return nil
}

// encodedACLs is the stored ACLs and their generation.
func (s *authStore) encodedACLs() (uint64, [][]byte) {
	if s.b.cl != nil {
		return s.b.cl.Auth().ACLs()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen.Load(), slices.Clone(s.acls)
}

// aclGen is the ACLs' generation, cheaply.
func (s *authStore) aclGen() uint64 {
	if s.b.cl != nil {
		return s.b.cl.Auth().AuthGen()
	}
	return s.gen.Load()
}

// Index implements auth.ACLSource: the index of the current ACLs, rebuilt
// when they changed. A stored ACL that does not decode is logged and left
// out (it allows nothing; a deny it held is lost, which the log says).
func (s *authStore) Index() *auth.ACLIndex {
	if cur := s.idx.Load(); cur != nil && cur.gen == s.aclGen() {
		return cur.x
	}
	gen, enc := s.encodedACLs()
	acls := make([]auth.ACL, 0, len(enc))
	for _, b := range enc {
		a, err := auth.DecodeACL(b)
		if err != nil {
			s.b.logger.Error("a stored ACL does not decode: left out of authorization", "err", err)
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
	if s.b.cl != nil {
		return s.b.cl.ApplyAuth(ctx, &meta.Command{Op: meta.OpAddACLs, ACLs: enc}, nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	wb := s.b.db.NewBatch()
	defer wb.Close()
	for _, b := range enc {
		if err := wb.Set(append([]byte(aclKeyPrefix), b...), nil, nil); err != nil {
			return err
		}
	}
	if err := wb.Commit(pebble.Sync); err != nil {
		return err
	}
	for _, b := range enc {
		if i, found := slices.BinarySearchFunc(s.acls, b, bytes.Compare); !found {
			s.acls = slices.Insert(s.acls, i, b)
		}
	}
	s.gen.Add(1)
	return nil
}

// removeACLs deletes the ACLs f matches, as the store holds them when the
// write runs (on the metadata leader, after its barrier).
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
	if s.b.cl != nil {
		cmd := &meta.Command{Op: meta.OpRemoveACLs}
		err := s.b.cl.ApplyAuth(ctx, cmd, func(m *meta.FSM) error {
			_, all := m.ACLs()
			cmd.ACLs = match(all)
			if len(cmd.ACLs) == 0 {
				return errNoACLMatch
			}
			return nil
		})
		if errors.Is(err, errNoACLMatch) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		auth.SortACLs(removed)
		return removed, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	enc := match(s.acls)
	wb := s.b.db.NewBatch()
	defer wb.Close()
	for _, b := range enc {
		if err := wb.Delete(append([]byte(aclKeyPrefix), b...), nil); err != nil {
			return nil, err
		}
	}
	if err := wb.Commit(pebble.Sync); err != nil {
		return nil, err
	}
	s.acls = slices.DeleteFunc(s.acls, func(b []byte) bool {
		return slices.ContainsFunc(enc, func(e []byte) bool { return bytes.Equal(e, b) })
	})
	s.gen.Add(1)
	auth.SortACLs(removed)
	return removed, nil
}

// errNoACLMatch ends a removal that matched nothing before it is proposed.
var errNoACLMatch = errors.New("no ACL matches")
