package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/httpapi"
)

// httpFrontEnd is the HTTP port (--http-addr): the JSON API, live tail
// and console of package httpapi, /metrics, /healthz, /readyz and, with
// --pprof, /debug/pprof/. It listens before the broker opens; until Start
// gives it the broker, / answers 503.
type httpFrontEnd struct {
	n      *Node
	srv    *http.Server
	lis    *capListener
	served sync.WaitGroup
	// b is the broker, set by Start; api is the JSON API over it.
	b   atomic.Pointer[broker.Broker]
	api atomic.Pointer[httpapi.Handler]
	// gate is the broker's authentication policy.
	gate atomic.Pointer[auth.Gate]
}

// listenHTTP serves the HTTP port under its own connection cap (with a
// reserve for the probes), over the node's TLS when it serves TLS, behind
// httpapi's Guard (browsers of other origins may not write; a loopback
// port answers loopback Host names).
func listenHTTP(n *Node) (*httpFrontEnd, error) {
	cfg := n.cfg
	tcp, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on --http-addr %s: %w (is another logd running?)", cfg.HTTPAddr, err)
	}
	guard, err := httpapi.NewGuard(httpapi.GuardConfig{AllowedOrigins: cfg.HTTPAllowedOrigins, ListenAddr: tcp.Addr().String()})
	if err != nil {
		tcp.Close()
		return nil, err
	}
	rejected := prometheus.NewCounter(prometheus.CounterOpts{Name: "logd_http_connections_rejected_total",
		Help: "HTTP connections refused because --max-http-connections were open: closed on arrival, or answered 503 in the probes' reserve."})
	n.reg.MustRegister(rejected)
	h := &httpFrontEnd{n: n}
	h.lis = newCapListener(tcp, cfg.MaxHTTPConnections, rejected, func(open int64) {
		n.logger.Warn("the HTTP connection limit is reached: new connections serve only /healthz, /readyz and /metrics, or are closed (raise --max-http-connections, or find the client that opens so many, such as live tails)",
			"open", open, "max", cfg.MaxHTTPConnections)
	})
	h.lis.reserve = httpProbeReserve
	var served net.Listener = h.lis
	if n.tls != nil {
		// The same certificate (and client CA) as the API.
		served = tls.NewListener(h.lis, n.tls.TLSConfig("h2", "http/1.1"))
	}
	// Keep-alive connections idle for httpIdleTimeout are closed: a
	// scraper reconnects at its next scrape.
	h.srv = &http.Server{Handler: guard.Wrap(h.probeReserve(h.httpAuth(h.handler()), rejected)),
		ConnContext: markReserved, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: httpIdleTimeout}
	h.served.Add(1)
	go func() { defer h.served.Done(); h.srv.Serve(served) }()
	return h, nil
}

// Start serves b's JSON API and identifies requests through b's Gate.
func (h *httpFrontEnd) Start(b *broker.Broker) error {
	gate := b.Gate()
	h.b.Store(b)
	h.gate.Store(&gate)
	// Any node answers any request: what another node leads is passed on
	// to it over the peer service.
	h.api.Store(httpapi.New(b.AnyNode(), httpapi.Config{Principal: httpPrincipal}))
	return nil
}

func (h *httpFrontEnd) Addr() string { return h.lis.Addr().String() }

// Close shuts the port down, ending the live tails and giving other
// requests in flight a second.
func (h *httpFrontEnd) Close() error {
	if api := h.api.Load(); api != nil {
		api.Close() // the live tails end: Shutdown waits for its requests
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err := h.srv.Shutdown(ctx)
	cancel()
	h.served.Wait()
	return err
}

func (h *httpFrontEnd) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(h.n.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !h.n.ready.Load() {
			http.Error(w, "not ready: recovering or shutting down", http.StatusServiceUnavailable)
			return
		}
		if cl := h.b.Load().Cluster(); cl != nil && cl.Refused() != nil {
			http.Error(w, "not ready: "+cl.Refused().Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if api := h.api.Load(); api != nil {
			api.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, `{"error": "not ready: the node is recovering its data; retry shortly"}`)
	})
	if h.n.cfg.PProf {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}
