package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/kafka"
)

// defaultKafkaAddr is --kafka-addr's default: Kafka's port, on loopback.
const defaultKafkaAddr = "127.0.0.1:9092"

// kafkaFlags are serve's flags for the Kafka listener (docs/kafka.md).
type kafkaFlags struct {
	addr, advertised string
	explicit         bool // --kafka-addr was given (flag, env or config file)
	srv              *kafka.Server
	tls              *tlsconfig.Server // the listener's TLS; nil: plaintext
}

func (k *kafkaFlags) register(f *pflag.FlagSet) {
	f.StringVar(&k.addr, "kafka-addr", defaultKafkaAddr, `Kafka protocol listen address ("" turns the listener off)`)
	f.StringVar(&k.advertised, "kafka-advertised-addr", "", "HOST:PORT Kafka clients are told to connect to (default: the --kafka-addr listener's)")
}

// check validates the addresses before anything is opened.
func (k *kafkaFlags) check(f *pflag.FlagSet) error {
	k.explicit = f.Changed("kafka-addr")
	for _, a := range [][2]string{{"--kafka-addr", k.addr}, {"--kafka-advertised-addr", k.advertised}} {
		if a[1] == "" {
			continue
		}
		_, port, err := net.SplitHostPort(a[1])
		if err != nil {
			return fmt.Errorf("%s %s is not HOST:PORT (%v): give one such as %s", a[0], a[1], err, defaultKafkaAddr)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("%s %s: port %q is not a port number (0 to 65535)", a[0], a[1], port)
		}
	}
	return nil
}

// start is server.Config.BeforeReady: it starts the listener over the
// broker, over TLS when --tls-cert is given (the API's files: a client
// certificate from --tls-client-ca names the principal). When the default
// address is taken (another Kafka, or another logd on this machine) the
// node runs without it and says so; an address given explicitly must be
// served. maxConns is --max-connections: the listener has a cap of its own
// of that many, apart from the gRPC API's.
func (k *kafkaFlags) start(b *broker.Broker, logger *slog.Logger, files tlsconfig.ServerFiles, maxConns int) (broker.Node, error) {
	if k.addr == "" {
		return broker.Node{}, nil
	}
	// The node's authentication policy: --auth and its users.
	cfg := kafka.Config{Core: b, AdvertisedAddr: k.advertised, Logger: logger, Gate: b.Gate(), MaxConns: maxConns}
	if files.CertFile != "" {
		files.OnReloadError = func(err error) {
			logger.Error("Kafka listener: TLS certificate files changed but do not load; the previous certificate keeps serving", "err", err)
		}
		srv, err := tlsconfig.NewServer(files)
		if err != nil {
			return broker.Node{}, fmt.Errorf("kafka listener TLS: %w", err)
		}
		k.tls, cfg.TLS = srv, srv.TLSConfig()
	}
	s, err := kafka.Listen(k.addr, cfg)
	if err != nil {
		if !k.explicit && errors.Is(err, syscall.EADDRINUSE) {
			logger.Warn("Kafka listener off: its default address is in use; give --kafka-addr HOST:PORT to serve Kafka clients, or --kafka-addr \"\" to silence this",
				"addr", k.addr)
			return broker.Node{}, nil
		}
		return broker.Node{}, fmt.Errorf("--kafka-addr: %w", err)
	}
	k.srv = s
	logger.Info("Kafka listener serving", "addr", s.Addr().String(), "advertised", s.AdvertisedAddr(), "tls", k.tls != nil)
	return broker.Node{KafkaAddr: s.AdvertisedAddr()}, nil
}

// reloadTLS re-reads the listener's TLS files now (SIGHUP).
func (k *kafkaFlags) reloadTLS() error {
	if k.tls == nil {
		return nil
	}
	return k.tls.Reload()
}

// close stops the listener, if it runs.
func (k *kafkaFlags) close() {
	if k.srv != nil {
		k.srv.Close()
	}
}
