// Package auth is logd's security layer, shared by every front-end (gRPC,
// Kafka, HTTP) and by the Raft transport. It owns:
//
//   - TLS configurations, in the leaf package auth/tlsconfig (so the Go
//     client links it alone): a listener's (optionally mutual), a client's
//     and the Raft transport's (always mutual under one cluster CA).
//     Certificates and CA bundles are re-read when their files change, or
//     on Reload (the server calls it on SIGHUP), without a restart.
//   - Principals: who a request is from. A verified client certificate names
//     User:<CN>; a SASL or password login names User:<user>; nothing names
//     User:ANONYMOUS. AuthMode (--auth none|optional|required) decides
//     whether an unauthenticated connection is admitted; Gate.Identify
//     applies these rules for every front-end.
//   - SCRAM credentials (SCRAM-SHA-256 and SCRAM-SHA-512, through
//     github.com/xdg-go/scram), their storage encoding, the CredentialStore
//     the core backs with the cluster metadata, and the Authenticator that
//     drives a SASL exchange (Kafka SaslAuthenticate) or checks a user and
//     password (SASL PLAIN, gRPC and HTTP request metadata).
//   - ACLs, their storage encoding, the ACLStore, and the authorization
//     decision (Authorizer.Authorize), the one point every front-end passes
//     through by way of the core.
//   - The audit of denials: a rate-limited log line and the counter
//     logd_authz_denied_total{operation,resource_type}.
//
// The package speaks Go types and sentinel errors only; mapping a denial to
// gRPC PERMISSION_DENIED or Kafka TOPIC_AUTHORIZATION_FAILED is the
// front-end's job (errors.As on *DeniedError says which resource type).
//
// # Threat model, in short
//
// docs/security.md has the long form. Protected: records, topic and group
// metadata and committed offsets against a network attacker (TLS: nobody
// reads or alters traffic), against clients without credentials (AuthMode),
// against authenticated clients acting beyond their ACLs (Authorizer), and
// the Raft groups against nodes without a certificate from the cluster CA.
// Not protected: data at rest (segment files and Pebble are plaintext; use an
// encrypted volume), an attacker with the node's files or memory, denial of
// service by a client that is allowed to write.
//
// # Invariants
//
//   - Deny wins: a matching deny ACL refuses the request whatever allows it;
//     only super users and --authz off bypass ACLs.
//   - No match is a refusal (Kafka's allow.everyone.if.no.acl.found=false).
//   - No password is ever stored or logged: a user is stored as salted,
//     iterated SCRAM credentials (salt, iteration count, StoredKey,
//     ServerKey), one per mechanism. Secrets are compared in constant time.
//   - An unknown user and a wrong password fail the same way, at the same
//     step: SCRAM answers an unknown user with a made-up salt, so a client
//     cannot enumerate users.
//   - A principal comes only from a verified certificate chain or a
//     completed SASL/password check, never from a name the client asserts.
//   - TLS 1.2 is the minimum version everywhere; the Raft transport always
//     requires and verifies a peer certificate from the cluster CA, both
//     ways.
//   - A certificate file that fails to load never replaces a working one: the
//     old certificate keeps serving and the error is reported.
//
// # Storage encodings
//
// Credentials (Credentials.MarshalBinary, DecodeCredentials) and ACLs
// (ACL.MarshalBinary, DecodeACL) are stored by the core in the cluster
// metadata as opaque bytes. Both start with a version byte, so a later
// version can be read next to this one; both decoders refuse trailing bytes,
// unknown enumerations and out-of-range lengths rather than guessing. The
// layouts are drawn next to the code, in credential_codec.go and
// acl_codec.go.
package auth
