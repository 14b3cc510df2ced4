package server

import (
	"errors"
	"fmt"

	"github.com/logd/logd/auth/tlsconfig"
)

// loadTLS loads the API's certificate files (Config.TLS), if any: a file
// that does not load fails Start, naming it.
func (s *Server) loadTLS() error {
	f := s.cfg.TLS
	if f.CertFile == "" && f.KeyFile == "" && f.ClientCAFile == "" {
		return nil
	}
	if f.CertFile == "" || f.KeyFile == "" {
		return fmt.Errorf("TLS needs both --tls-cert and --tls-key (--tls-client-ca alone is not enough)")
	}
	f.OnReloadError = func(err error) {
		s.logger.Error("TLS certificate files changed but do not load; the previous certificate keeps serving", "err", err)
	}
	srv, err := tlsconfig.NewServer(f)
	if err != nil {
		return fmt.Errorf("TLS: %w", err)
	}
	s.tls = srv
	return nil
}

// TLSEnabled reports whether the API or the Raft port serves TLS.
func (s *Server) TLSEnabled() bool { return s.tls != nil || s.raftTLS != nil }

// ReloadTLS re-reads the TLS files now (on SIGHUP): the API's and the Raft
// port's. Files that fail to load keep the previous ones serving; the error
// names them. Without TLS it does nothing.
func (s *Server) ReloadTLS() error {
	var errs []error
	if s.tls != nil {
		errs = append(errs, s.tls.Reload())
	}
	if s.raftTLS != nil {
		errs = append(errs, s.raftTLS.Reload())
	}
	return errors.Join(errs...)
}
