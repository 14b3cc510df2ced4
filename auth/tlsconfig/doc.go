// Package tlsconfig builds logd's TLS configurations from certificate
// files: a listener's (Server: the gRPC API, the Kafka listener and the
// HTTP port, optionally requiring client certificates), a client's
// (NewClient: the CLI and the Go client) and the Raft transport's (Raft:
// always mutual, under one cluster CA).
//
// It is a leaf of package auth, importing only the standard library, so
// the Go client can link it without auth's Prometheus and SCRAM
// dependencies. The principal of a verified client certificate is
// auth.CertificatePrincipal.
//
// Invariants:
//   - TLS 1.2 is the minimum version of every configuration.
//   - Raft connections present and verify a certificate from the cluster
//     CA in both directions; a peer without one cannot connect either way.
//   - Files are re-read when they change (size, modification time or inode,
//     checked at each handshake) or on Reload (SIGHUP). A file that fails to
//     load never replaces a working certificate: the old one keeps serving,
//     and the error is returned (Reload) or reported once per change
//     (OnReloadError).
//   - A certificate already expired is refused when loaded, so rotating in
//     a stale file by mistake is caught at once rather than at every
//     handshake.
package tlsconfig
