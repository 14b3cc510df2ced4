package server

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config configures the gRPC front-end. Zero values take the documented
// defaults. The largest message a client may send is a little more than
// the broker's largest batch (broker.Config.MaxBatchBytes).
type Config struct {
	// SendTimeout ends a Subscribe stream whose client has read nothing
	// for this long while a message waited for it. 0: DefaultSendTimeout.
	SendTimeout time.Duration
	// TLS, when set, serves the API over TLS (the node's certificates,
	// re-read as they change); nil: plaintext.
	TLS *tls.Config
	// Registry is the node's Prometheus registry, where the front-end's
	// collectors go; nil: a registry of its own.
	Registry *prometheus.Registry
	Logger   *slog.Logger
}

// withDefaults fills in the defaults.
func (cfg Config) withDefaults() Config {
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = DefaultSendTimeout
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg
}
