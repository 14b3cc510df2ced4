package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
)

// MinVersion is the oldest protocol any logd endpoint speaks.
const MinVersion = tls.VersionTLS12

// ServerFiles names a listener's files (--tls-cert, --tls-key,
// --tls-client-ca).
type ServerFiles struct {
	CertFile, KeyFile string
	// ClientCAFile, when set, turns on mutual TLS: every client must present
	// a certificate that chains to one of these CAs.
	ClientCAFile string
	// OnReloadError is told when changed files fail to load during a
	// handshake (the previous certificate keeps serving). Nil ignores it;
	// the server logs it.
	OnReloadError func(error)
}

// Server is a listener's TLS: the gRPC API, the Kafka listener and the
// HTTP port each build their tls.Config from one.
type Server struct {
	keys      *watched[tls.Certificate]
	clientCAs *watched[x509.CertPool] // nil: no client certificates asked for
}

// NewServer loads the files; each later handshake sees changes to them.
func NewServer(c ServerFiles) (*Server, error) {
	keys, err := watchKeyPair(c.CertFile, c.KeyFile, c.OnReloadError)
	if err != nil {
		return nil, err
	}
	s := &Server{keys: keys}
	if c.ClientCAFile != "" {
		if s.clientCAs, err = watchCAPool(c.ClientCAFile, c.OnReloadError); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Mutual reports whether clients must present a verified certificate.
func (s *Server) Mutual() bool { return s.clientCAs != nil }

// Reload re-reads every file now (on SIGHUP). Files that fail keep the old
// values in use; the error names them.
func (s *Server) Reload() error { return reloadAll(s.keys, s.clientCAs) }

// TLSConfig is the listener's configuration. The configuration of each
// handshake is built from the current files, so nextProtos must be given
// here: a change to the returned config's NextProtos (as
// grpc/credentials.NewTLS makes, adding "h2") does not reach the handshake.
// gRPC passes "h2"; HTTP passes "h2", "http/1.1"; Kafka nothing.
func (s *Server) TLSConfig(nextProtos ...string) *tls.Config {
	return &tls.Config{
		MinVersion: MinVersion,
		NextProtos: nextProtos,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.handshakeConfig(nextProtos), nil
		},
	}
}

func (s *Server) handshakeConfig(nextProtos []string) *tls.Config {
	c := &tls.Config{
		MinVersion:   MinVersion,
		NextProtos:   nextProtos,
		Certificates: []tls.Certificate{*s.keys.current()},
	}
	if s.clientCAs != nil {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = s.clientCAs.current()
	}
	return c
}

// ClientFiles names a client's files (--tls-ca, --tls-cert, --tls-key,
// or LOGD_TLS_CA, LOGD_TLS_CERT, LOGD_TLS_KEY).
type ClientFiles struct {
	// CAFile is the CA bundle that signs the server's certificate; empty
	// trusts the system's roots.
	CAFile string
	// CertFile and KeyFile, both or neither, are the client's certificate
	// for a server that asks for one (mutual TLS).
	CertFile, KeyFile string
	// ServerName overrides the name checked in the server's certificate
	// (by default the host the client dials).
	ServerName string
}

// NewClient is a client's tls.Config. The client certificate is re-read
// when its files change (a long-running client survives a rotation); the
// CA bundle is read once.
func NewClient(c ClientFiles) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: MinVersion, ServerName: c.ServerName}
	if c.CAFile != "" {
		pool, err := loadCAPool(c.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if c.CertFile != "" || c.KeyFile != "" {
		keys, err := watchKeyPair(c.CertFile, c.KeyFile, nil)
		if err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return keys.current(), nil
		}
	}
	return cfg, nil
}

// RaftFiles names the Raft transport's files (--raft-tls-cert,
// --raft-tls-key, --raft-tls-ca). All three are required: Raft TLS is
// always mutual.
type RaftFiles struct {
	CertFile, KeyFile string
	// CAFile is the cluster CA: it signs every node's certificate, and a
	// peer whose certificate it did not sign cannot connect either way. It
	// should sign node certificates only (not clients'), since any
	// certificate it signed may send Raft traffic.
	CAFile        string
	OnReloadError func(error)
}

// Raft is the Raft transport's TLS: the node's certificate serves
// incoming connections and authenticates outgoing ones, and the cluster CA
// verifies peers in both directions.
type Raft struct {
	keys *watched[tls.Certificate]
	ca   *watched[x509.CertPool]
}

// NewRaft loads the three files.
func NewRaft(c RaftFiles) (*Raft, error) {
	if c.CAFile == "" {
		return nil, fmt.Errorf("%w: Raft TLS needs the cluster CA file (--raft-tls-ca) as well as a certificate and key", ErrInvalid)
	}
	keys, err := watchKeyPair(c.CertFile, c.KeyFile, c.OnReloadError)
	if err != nil {
		return nil, err
	}
	ca, err := watchCAPool(c.CAFile, c.OnReloadError)
	if err != nil {
		return nil, err
	}
	return &Raft{keys: keys, ca: ca}, nil
}

// Reload re-reads the three files now.
func (r *Raft) Reload() error { return reloadAll(r.keys, r.ca) }

// ServerConfig is the Raft listener's configuration: a client certificate
// from the cluster CA is required.
func (r *Raft) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: MinVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return &tls.Config{
				MinVersion:   MinVersion,
				Certificates: []tls.Certificate{*r.keys.current()},
				ClientAuth:   tls.RequireAndVerifyClientCert,
				ClientCAs:    r.ca.current(),
			}, nil
		},
	}
}

// ClientConfig is the configuration of one outgoing Raft connection to the
// peer named serverName (the host of its Raft address, which its
// certificate must name). Call it per dial: it carries the CA bundle as of
// now.
func (r *Raft) ClientConfig(serverName string) *tls.Config {
	return &tls.Config{
		MinVersion: MinVersion,
		ServerName: serverName,
		RootCAs:    r.ca.current(),
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return r.keys.current(), nil
		},
	}
}
