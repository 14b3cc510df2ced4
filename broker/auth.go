package broker

import (
	"context"
	"errors"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
)

// Authentication and authorization (docs/security.md). The
// broker owns the users and ACLs (authstore.go: the cluster metadata, or
// the node's Pebble store when it runs alone), the Authenticator the
// front-ends' Gate uses, and the one Authorizer: every method that takes
// a Principal checks it here, before any effect, whatever front-end the
// request came through. A denial is a *auth.DeniedError, which matches
// ErrDenied, and is audited (log line, logd_authz_denied_total).

// Principal is who makes a request, in canonical form ("User:alice"); ""
// is anonymous (auth.Anonymous). Front-ends make it with PrincipalOf from
// the identity their Gate decided.
type Principal string

// PrincipalOf is the Principal of an authenticated identity: "" for no one
// or Anonymous.
func PrincipalOf(id auth.Identity) Principal {
	if id.Principal.IsZero() || id.Principal == auth.Anonymous {
		return ""
	}
	return Principal(id.Principal.String())
}

// Auth reads the Principal back: "" is auth.Anonymous.
func (p Principal) Auth() (auth.Principal, error) {
	if p == "" {
		return auth.Anonymous, nil
	}
	return auth.ParsePrincipal(string(p))
}

// AuthConfig is the node's security policy: --auth, --authz and
// --super-users. The zero value authenticates no one (every request is
// anonymous) and authorizes everything.
type AuthConfig struct {
	Mode       auth.AuthMode
	Authz      auth.AuthzMode
	SuperUsers []auth.Principal
	// Authenticator tunes password checks (zero: the defaults).
	Authenticator auth.AuthenticatorConfig
	// BootstrapUser and BootstrapPassword, when set, make sure this user
	// exists (created with this password unless it exists already): the
	// first administrator of a node whose clients log in with passwords
	// only (no client certificate can name a super user). In a cluster the
	// node creates it when it leads the metadata. serve reads it from
	// LOGD_BOOTSTRAP_USER=name:password, never from the command line.
	BootstrapUser, BootstrapPassword string
}

// openAuth builds the stores over the metadata, the Authenticator, the
// Authorizer and its audit (registered on the node's registry).
func (b *Broker) openAuth() error {
	s := &authStore{cp: b.plane, logger: b.logger}
	b.authStore = s
	c := b.cfg.Auth
	var err error
	b.authn, err = auth.NewAuthenticator(s, c.Authenticator)
	if err != nil {
		return err
	}
	audit := auth.NewDenialAudit(b.logger, 0, 0)
	b.m.reg.MustRegister(audit)
	b.authz, err = auth.NewAuthorizer(auth.AuthorizerConfig{Mode: c.Authz, SuperUsers: c.SuperUsers, ACLs: s, Audit: audit})
	return err
}

// Gate is the node's authentication policy (--auth and the Authenticator
// over the node's users), for the front-ends' Gate.Identify.
func (b *Broker) Gate() auth.Gate {
	return auth.Gate{Mode: b.cfg.Auth.Mode, Authenticator: b.authn}
}

// AuthConfig is the node's security policy.
func (b *Broker) AuthConfig() AuthConfig { return b.cfg.Auth }

// CredentialStore is the node's users (the cluster metadata's, or the
// node's own store). It checks no principal: the broker's user methods
// (CreateUser, DeleteUser, Users) do.
func (b *Broker) CredentialStore() auth.CredentialStore { return b.authStore }

// ACLStore is the node's ACLs. It checks no principal: AddACLs,
// RemoveACLs and ListACLs do.
func (b *Broker) ACLStore() auth.ACLStore { return b.authStore }

// identity is pr with the client address a front-end put in ctx.
func identity(ctx context.Context, pr Principal) (auth.Identity, error) {
	id := auth.IdentityFrom(ctx)
	p, err := pr.Auth()
	if err != nil {
		return id, kind.Errorf(kind.ErrInvalidArgument, "principal %q: %v", string(pr), err)
	}
	id.Principal = p
	return id, nil
}

// Authorize is the one authorization point: nil when pr may do op on r,
// else a *auth.DeniedError (errors.Is(err, ErrDenied)), audited. The
// broker's methods call it (the group methods of groups.go too), so a
// front-end never authorizes a request itself.
func (b *Broker) Authorize(ctx context.Context, pr Principal, op auth.Operation, r auth.Resource) error {
	id, err := identity(ctx, pr)
	if err != nil {
		return err
	}
	return b.authz.Authorize(id, op, r)
}

// Allowed is Authorize without the audit, for filtering listings (a
// hidden entry is not a refused request).
func (b *Broker) Allowed(pr Principal, op auth.Operation, r auth.Resource) bool {
	return b.allowed(pr, op, r)
}

// allowed is Authorize without the audit: for filtering listings.
func (b *Broker) allowed(pr Principal, op auth.Operation, r auth.Resource) bool {
	p, err := pr.Auth()
	return err == nil && b.authz.Allowed(p, op, r)
}

// authorizeCreate allows a topic's creation with create on the cluster or
// on the topic (Kafka's rule), unless a deny ACL refuses create on the
// topic (deny wins); a denial names the topic.
func (b *Broker) authorizeCreate(ctx context.Context, pr Principal, topic string) error {
	if b.allowed(pr, auth.OpCreate, auth.Cluster()) && !b.deniedByACL(pr, auth.OpCreate, auth.Topic(topic)) {
		return nil
	}
	return b.Authorize(ctx, pr, auth.OpCreate, auth.Topic(topic))
}

// deniedByACL reports whether a deny ACL refuses pr op on r (super users
// and --authz off are refused nothing).
func (b *Broker) deniedByACL(pr Principal, op auth.Operation, r auth.Resource) bool {
	p, err := pr.Auth()
	if err != nil {
		return true
	}
	if b.cfg.Auth.Authz == auth.AuthzOff || b.isSuperUser(p) {
		return false
	}
	return b.authStore.Index().Decide(p, op, r) == auth.Denied
}

func (b *Broker) isSuperUser(p auth.Principal) bool {
	for _, s := range b.cfg.Auth.SuperUsers {
		if s == p {
			return true
		}
	}
	return false
}

// authorizeRead checks read on a fetch's topic once per request: seen
// holds the topics already checked.
func (b *Broker) authorizeRead(ctx context.Context, pr Principal, topic string, seen map[string]error) error {
	if err, ok := seen[topic]; ok {
		return err
	}
	err := b.Authorize(ctx, pr, auth.OpRead, auth.Topic(topic))
	seen[topic] = err
	return err
}

// bootstrapUser creates AuthConfig.BootstrapUser unless it exists: at
// once on a node that runs alone, in a cluster once this node leads the
// metadata (or another node has created it). It stops at shutdown.
func (b *Broker) bootstrapUser() {
	name, pw := b.cfg.Auth.BootstrapUser, b.cfg.Auth.BootstrapPassword
	for {
		if _, err := b.authStore.Lookup(name); err == nil {
			return
		}
		if _, leads := b.plane.metaLeader(); leads {
			c, err := auth.NewCredentials(pw, auth.DefaultIterations)
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), authWriteTimeout)
				err = b.authStore.putUser(ctx, name, c, false)
				cancel()
			}
			switch {
			case err == nil:
				b.logger.Info("bootstrap user created (LOGD_BOOTSTRAP_USER)", "user", name)
				return
			case errors.Is(err, ErrUserExists):
				return
			case b.plane.alone():
				b.logger.Error("cannot create the bootstrap user (LOGD_BOOTSTRAP_USER)", "user", name, "err", err)
				return
			}
		}
		select {
		case <-b.shutdown:
			return
		case <-time.After(time.Second):
		}
	}
}
