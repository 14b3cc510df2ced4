package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Guard keeps web pages of other sites from using the HTTP port through a
// visitor's browser (docs/http.md, "Browsers"):
//
//   - a state-changing request (any method but GET, HEAD and OPTIONS)
//     that a browser marks as coming from another origin (Sec-Fetch-Site,
//     or an Origin that is not the request's Host) is refused with 403
//     unless its Origin is one of GuardConfig.AllowedOrigins; requests
//     without either header (curl, scripts, the clients) pass;
//   - on a port bound to a loopback address, a request whose Host is not
//     a loopback name (localhost, a loopback IP, a host of an allowed
//     origin) is refused with 403: a DNS-rebinding page reaches the port
//     under a name of its own, which is never one of these;
//   - pages of the allowed origins may also read answers and send JSON
//     (CORS: their preflights are answered, their answers carry
//     Access-Control-Allow-Origin); no other origin gets CORS headers;
//   - every answer carries X-Frame-Options: DENY and, unless the handler
//     sets its own policy, Content-Security-Policy: frame-ancestors
//     'none', so no other page can frame the console.
//
// /healthz and /readyz are exempt from the Host check: probes name the
// host as they like, and those paths reveal only liveness.
type Guard struct {
	origins  map[string]bool // normalized, as parseOrigin returns them
	hosts    map[string]bool // the allowed origins' host names
	loopback bool
	listen   string
}

// GuardConfig configures a Guard.
type GuardConfig struct {
	// AllowedOrigins are the origins (scheme://host[:port]) whose pages
	// may send state-changing requests (--http-allowed-origins).
	AllowedOrigins []string
	// ListenAddr is the address the port is bound to. When its IP is a
	// loopback address, only loopback Host names and the allowed origins'
	// hosts are served.
	ListenAddr string
}

// NewGuard checks cfg and returns its guard.
func NewGuard(cfg GuardConfig) (*Guard, error) {
	g := &Guard{origins: map[string]bool{}, hosts: map[string]bool{}, listen: cfg.ListenAddr}
	for _, o := range cfg.AllowedOrigins {
		n, host, err := parseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("--http-allowed-origins: %w", err)
		}
		g.origins[n] = true
		g.hosts[host] = true
	}
	if h, _, err := net.SplitHostPort(cfg.ListenAddr); err == nil {
		ip := net.ParseIP(h)
		g.loopback = ip != nil && ip.IsLoopback()
	}
	return g, nil
}

// parseOrigin normalizes an origin: lower-case scheme and host, no
// default port, no trailing slash. It returns the origin and its host
// name (without port or brackets).
func parseOrigin(s string) (origin, host string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("%q: %s; want scheme://host[:port], such as https://ops.example.com", s, why)
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return bad("not a URL")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return bad("the scheme must be http or https")
	}
	if u.Host == "" || u.User != nil || u.Opaque != "" {
		return bad("no host")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return bad("an origin has no path, query or fragment")
	}
	host = strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	hp := host
	if strings.Contains(host, ":") {
		hp = "[" + host + "]"
	}
	if port != "" {
		hp += ":" + port
	}
	return scheme + "://" + hp, host, nil
}

// Wrap returns next behind the guard.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		if g.loopback && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && !g.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, "Host %q is not served: this port is bound to the loopback address %s and answers only "+
				"localhost, 127.0.0.1 and [::1] (a guard against DNS rebinding); to reach it under that name (a reverse proxy that "+
				"keeps the Host), list the origin in --http-allowed-origins, e.g. https://%s", r.Host, g.listen, hostName(r.Host))
			return
		}
		if g.cors(w, r) {
			return
		}
		if msg := g.crossOrigin(r); msg != "" {
			writeError(w, http.StatusForbidden, "%s", msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cors lets the pages of allowed origins call the API with fetch: their
// requests are answered with Access-Control-Allow-Origin, and their CORS
// preflights (which a JSON POST needs) are answered here, before
// authentication, as the browser sends them without credentials. It
// reports whether it answered the request. No other origin gets CORS
// headers, so no other page can read an answer.
func (g *Guard) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	if n, _, err := parseOrigin(origin); err != nil || !g.origins[n] {
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Idempotency-Key, Last-Event-ID, Authorization")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// hostName is a Host header's name, without port or brackets, lower case.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// hostAllowed reports whether a loopback port serves this Host: localhost,
// a loopback IP, or an allowed origin's host, on any port (a tunnel such
// as ssh -L changes the port). An empty Host (HTTP/1.0) names nothing a
// page could rebind.
func (g *Guard) hostAllowed(host string) bool {
	if host == "" {
		return true
	}
	name := hostName(host)
	if name == "localhost" || g.hosts[name] {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// crossOrigin returns why a request from a page of another origin is
// refused, or "" when it may proceed.
func (g *Guard) crossOrigin(r *http.Request) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	}
	origin := r.Header.Get("Origin")
	site := r.Header.Get("Sec-Fetch-Site")
	switch site {
	case "same-origin", "none": // the page itself, or the user (a bookmark)
		return ""
	case "":
		if origin == "" {
			return "" // not a browser, or one that tells nothing
		}
		if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
			return ""
		}
	}
	if n, _, err := parseOrigin(origin); err == nil && g.origins[n] {
		return ""
	}
	from := fmt.Sprintf("a page at %s", origin)
	if origin == "" || origin == "null" {
		from = "a page of another origin (no usable Origin header)"
	}
	why := "its Origin is not this node's Host"
	if site != "" {
		why = "Sec-Fetch-Site: " + site
	}
	return fmt.Sprintf("cross-origin %s refused: %s may not change anything here (%s). "+
		"If you trust that web application, start logd with --http-allowed-origins %s; "+
		"scripts and command-line clients send no Origin and are not affected", r.Method, from, why, suggestOrigin(origin))
}

func suggestOrigin(origin string) string {
	if n, _, err := parseOrigin(origin); err == nil {
		return n
	}
	return "https://app.example.com"
}
