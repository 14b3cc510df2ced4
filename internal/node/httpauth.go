package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// Authentication on the HTTP port (docs/security.md, docs/http.md). Every
// path but /healthz and /readyz (which reveal only liveness, for probes)
// is identified through the broker's Gate, like a gRPC call: a verified
// client certificate, or Basic credentials (over TLS only). A request
// without acceptable credentials is 401 with WWW-Authenticate; a denial
// of the core's is 403 with a JSON error (httpapi). /metrics and
// /debug/pprof/ (with --pprof) need describe on the cluster: they name
// every topic and group.

// httpAuth wraps the HTTP port's handler.
func (h *httpFrontEnd) httpAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		g := h.gate.Load()
		if g == nil {
			if h.n.cfg.Auth.Mode == auth.AuthNone {
				next.ServeHTTP(w, r) // recovering: /metrics, and 503 from /
				return
			}
			w.Header().Set("Retry-After", "1")
			httpJSONError(w, http.StatusServiceUnavailable, "not ready: the node is recovering its data; retry shortly")
			return
		}
		id, err := g.Identify(r.Context(), auth.Presented{TLS: r.TLS, Authorization: r.Header.Get("Authorization"), Addr: r.RemoteAddr})
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Basic realm="logd", charset="UTF-8"`)
			httpJSONError(w, http.StatusUnauthorized, httpAuthMessage(err))
			return
		}
		ctx := auth.NewContext(r.Context(), id)
		if r.URL.Path == "/metrics" || strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			if err := h.b.Load().Authorize(ctx, broker.PrincipalOf(id), auth.OpDescribe, auth.Cluster()); err != nil {
				httpJSONError(w, http.StatusForbidden, err.Error())
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// httpPrincipal is the principal httpAuth attached to a request.
func httpPrincipal(r *http.Request) broker.Principal {
	return broker.PrincipalOf(auth.IdentityFrom(r.Context()))
}

func httpAuthMessage(err error) string {
	var ae *auth.AuthenticationError
	switch {
	case errors.As(err, &ae):
		return ae.Error()
	case errors.Is(err, auth.ErrPlaintextCredentials):
		return "a password is accepted over TLS only: use https, or a client certificate"
	case errors.Is(err, auth.ErrUnauthenticated):
		return "this node requires authentication: send Basic credentials over https (curl -u USER), or a client certificate"
	}
	return err.Error()
}

func httpJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{msg})
}

// warnOpen warns loudly when the node listens beyond loopback without
// authentication: anyone who reaches the port may do anything.
func (n *Node) warnOpen(kafkaAddr string) {
	if n.cfg.Auth.Mode != auth.AuthNone {
		return
	}
	addrs := []string{n.cfg.Addr}
	if n.cfg.HTTPAddr != "" {
		addrs = append(addrs, n.cfg.HTTPAddr)
	}
	if kafkaAddr != "" {
		addrs = append(addrs, kafkaAddr)
	}
	if open := auth.NonLoopback(addrs...); len(open) > 0 {
		n.logger.Warn("!!! AUTHENTICATION IS OFF (--auth none) ON A NETWORK ADDRESS: anyone who can reach these ports can read, write and delete every topic; start with --auth required (and TLS), or listen on 127.0.0.1 only !!!",
			"addrs", strings.Join(open, ","))
	}
}

// reservedKey marks a request that arrived on a connection of the HTTP
// port's probe reserve (conns.go).
type reservedKey struct{}

// markReserved is the HTTP server's ConnContext.
func markReserved(ctx context.Context, c net.Conn) context.Context {
	if reservedConn(c) {
		return context.WithValue(ctx, reservedKey{}, true)
	}
	return ctx
}

// probeReserve serves, on a connection accepted past
// --max-http-connections, only /healthz, /readyz and /metrics, and closes
// the connection after the answer so the reserve empties; anything else
// there is 503 with what to do.
func (h *httpFrontEnd) probeReserve(next http.Handler, rejected prometheus.Counter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(reservedKey{}) == nil {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			next.ServeHTTP(w, r)
			return
		}
		rejected.Inc()
		w.Header().Set("Retry-After", "1")
		httpJSONError(w, http.StatusServiceUnavailable, fmt.Sprintf("this node's HTTP port has --max-http-connections (%d) connections open, "+
			"live tails holding one each: past it only /healthz, /readyz and /metrics are served; retry later, close streams you no longer read, "+
			"or raise --max-http-connections", h.n.cfg.MaxHTTPConnections))
	})
}
