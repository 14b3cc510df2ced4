package node

import (
	"fmt"

	"github.com/logd/logd/auth/tlsconfig"
)

// loadTLS loads the front-ends' certificate files (Config.TLS), if any: a
// file that does not load fails Start, naming it. The API, the HTTP port
// and the Kafka listener share them.
func (n *Node) loadTLS() error {
	f := n.cfg.TLS
	if f.CertFile == "" && f.KeyFile == "" && f.ClientCAFile == "" {
		return nil
	}
	if f.CertFile == "" || f.KeyFile == "" {
		return fmt.Errorf("TLS needs both --tls-cert and --tls-key (--tls-client-ca alone is not enough)")
	}
	f.OnReloadError = func(err error) {
		n.logger.Error("TLS certificate files changed but do not load; the previous certificate keeps serving", "err", err)
	}
	srv, err := tlsconfig.NewServer(f)
	if err != nil {
		return fmt.Errorf("TLS: %w", err)
	}
	n.tls = srv
	return nil
}
