package node

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/server"
	"github.com/logd/logd/kafka"
)

// apiFrontEnd is the gRPC API (package server) on --addr, under the
// connection cap.
type apiFrontEnd struct {
	n   *Node
	srv *server.Server
}

func newAPIFrontEnd(n *Node) *apiFrontEnd {
	cfg := server.Config{SendTimeout: n.cfg.SendTimeout,
		Registry: n.reg, Logger: n.logger}
	if n.tls != nil {
		cfg.TLS = n.tls.TLSConfig("h2")
	}
	return &apiFrontEnd{n: n, srv: server.New(cfg)}
}

// Start listens on --addr and serves b's gRPC services there.
func (a *apiFrontEnd) Start(b *broker.Broker) error {
	cfg, logger := a.n.cfg, a.n.logger
	tcp, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return listenError("--addr", cfg.Addr, err)
	}
	rejected := prometheus.NewCounter(prometheus.CounterOpts{Name: "logd_connections_rejected_total",
		Help: "Client connections closed on arrival because --max-connections were open."})
	lis := newCapListener(tcp, cfg.MaxConnections, rejected, func(open int64) {
		logger.Warn("refusing connections: the connection limit is reached (raise --max-connections, or find the client that opens so many)",
			"open", open, "max", cfg.MaxConnections)
	})
	a.n.reg.MustRegister(rejected, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "logd_connections",
		Help: "Client connections open on the API."}, func() float64 { return float64(lis.Open()) }))
	a.srv.Serve(b, lis)
	return nil
}

func (a *apiFrontEnd) Addr() string { return a.srv.Addr() }

func (a *apiFrontEnd) Close() error { return a.srv.Close() }

// kafkaFrontEnd is the Kafka listener (package kafka) on --kafka-addr,
// over the node's TLS when it serves TLS (a client certificate from
// --tls-client-ca names the principal), with a connection cap of its own
// of --max-connections, apart from the API's.
type kafkaFrontEnd struct {
	n        *Node
	maxConns int
	srv      *kafka.Server // nil until Start, or when an optional address was taken
}

func newKafkaFrontEnd(n *Node, maxConns int) *kafkaFrontEnd {
	return &kafkaFrontEnd{n: n, maxConns: maxConns}
}

// Start listens and serves b. When an optional address (the default) is
// taken, by another Kafka or another logd on this machine, the node runs
// without the listener and says so; an address given explicitly must be
// served.
func (k *kafkaFrontEnd) Start(b *broker.Broker) error {
	cfg, logger := k.n.cfg, k.n.logger
	kc := kafka.Config{Core: b, AdvertisedAddr: cfg.KafkaAdvertisedAddr, Logger: logger, Gate: b.Gate(), MaxConns: k.maxConns}
	if k.n.tls != nil {
		kc.TLS = k.n.tls.TLSConfig()
	}
	s, err := kafka.Listen(cfg.KafkaAddr, kc)
	if err != nil {
		if cfg.KafkaOptional && errors.Is(err, syscall.EADDRINUSE) {
			logger.Warn("Kafka listener off: its default address is in use; give --kafka-addr HOST:PORT to serve Kafka clients, or --kafka-addr \"\" to silence this",
				"addr", cfg.KafkaAddr)
			return nil
		}
		return fmt.Errorf("--kafka-addr: %w", err)
	}
	k.srv = s
	logger.Info("Kafka listener serving", "addr", s.Addr().String(), "advertised", s.AdvertisedAddr(), "tls", kc.TLS != nil)
	return nil
}

// Addr is the address the listener advertises ("" when it does not run).
func (k *kafkaFrontEnd) Addr() string {
	if k.srv == nil {
		return ""
	}
	return k.srv.AdvertisedAddr()
}

func (k *kafkaFrontEnd) Close() error {
	if k.srv == nil {
		return nil
	}
	return k.srv.Close()
}
