package auth

import (
	"fmt"
	"slices"
	"sync"
)

// CredentialStore is where users' credentials live. The core backs it with
// the cluster metadata (replicated; Pebble on a single node), storing the
// bytes of Credentials.MarshalBinary under the user name; `logd user
// create|delete|list` are Put, Delete and Users. Lookup is on every login,
// so it reads local state and does not go through Raft.
type CredentialStore interface {
	// Lookup is the user's credentials, or ErrUnknownUser.
	Lookup(user string) (Credentials, error)
	// Put creates or replaces the user's credentials.
	Put(user string, c Credentials) error
	// Delete removes the user, or returns ErrUnknownUser.
	Delete(user string) error
	// Users lists the user names, sorted.
	Users() ([]string, error)
}

// MemoryCredentialStore is a CredentialStore in memory, for tests and for
// building the core's. It keeps the encoded form, as a stored one would.
type MemoryCredentialStore struct {
	mu    sync.RWMutex
	users map[string][]byte
}

// NewMemoryCredentialStore is an empty store.
func NewMemoryCredentialStore() *MemoryCredentialStore {
	return &MemoryCredentialStore{users: map[string][]byte{}}
}

func (s *MemoryCredentialStore) Lookup(user string) (Credentials, error) {
	s.mu.RLock()
	b, ok := s.users[user]
	s.mu.RUnlock()
	if !ok {
		return Credentials{}, fmt.Errorf("%w %q", ErrUnknownUser, user)
	}
	return DecodeCredentials(b)
}

func (s *MemoryCredentialStore) Put(user string, c Credentials) error {
	if err := ValidateUserName(user); err != nil {
		return fmt.Errorf("%w: user %q: %v", ErrInvalid, user, err)
	}
	b, err := c.MarshalBinary()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[user] = b
	return nil
}

func (s *MemoryCredentialStore) Delete(user string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[user]; !ok {
		return fmt.Errorf("%w %q", ErrUnknownUser, user)
	}
	delete(s.users, user)
	return nil
}

func (s *MemoryCredentialStore) Users() ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.users))
	for u := range s.users {
		out = append(out, u)
	}
	slices.Sort(out)
	return out, nil
}
