package httpapi

import (
	"net"
	"net/http"
	"strings"
)

// The console's live tail outlives the node that serves the console: when
// that node stops or dies, the page (still open in the browser) resumes
// the tail on another node of the cluster, with the id of the last record
// it showed. That is a request to another origin (another host:port), so
// two things allow it, and only for the cluster's own nodes:
//
//   - the console's Content-Security-Policy lets it connect to its own
//     origin and to the members' advertised HTTP addresses (connect-src),
//     nothing else;
//   - a node's live tail answers a request whose Origin is a member's
//     HTTP address (the scheme this node serves) with that exact origin
//     in Access-Control-Allow-Origin and Access-Control-Allow-Credentials
//     (the page sends the credentials it has for the cluster, a client
//     certificate, with the request). Those origins serve this same
//     console; no wildcard and no other origin is ever allowed this way.
//
// A member advertised under an address a browser cannot name the same way
// (an unspecified IP such as 0.0.0.0, an IPv6 literal, which CSP cannot
// express) is left out: the tail then resumes on the others only.

// consoleHostPort is a member's advertised HTTP address as CSP and an
// Origin name it ("host:port", host of letters, digits, dots and dashes),
// or false when it cannot be.
func consoleHostPort(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" || strings.Trim(port, "0123456789") != "" {
		return "", false
	}
	if ip := net.ParseIP(host); ip != nil && (ip.IsUnspecified() || ip.To4() == nil) {
		return "", false
	}
	if strings.Trim(strings.ToLower(host), "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
		return "", false
	}
	return strings.ToLower(host) + ":" + port, true
}

// consoleConnectSrc is the console's CSP connect-src: its own origin and
// the members' HTTP addresses (scheme-less host-sources: the page's
// scheme, or https).
func (h *Handler) consoleConnectSrc(r *http.Request) string {
	src := "'self'"
	nodes, err := h.core.Nodes(r.Context())
	if err != nil {
		return src
	}
	for _, n := range nodes {
		if hp, ok := consoleHostPort(n.HTTPAddr); ok {
			src += " " + hp
		}
	}
	return src
}

// allowConsoleOrigin adds the CORS headers that let the console of
// another member of the cluster read this node's answer, when the
// request's Origin is one (see above).
func (h *Handler) allowConsoleOrigin(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return
	}
	got, _, err := parseOrigin(origin)
	if err != nil {
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	nodes, err := h.core.Nodes(r.Context())
	if err != nil {
		return
	}
	for _, n := range nodes {
		hp, ok := consoleHostPort(n.HTTPAddr)
		if !ok {
			continue
		}
		if member, _, err := parseOrigin(scheme + "://" + hp); err == nil && member == got {
			hdr := w.Header()
			hdr.Set("Access-Control-Allow-Origin", origin)
			hdr.Set("Access-Control-Allow-Credentials", "true")
			if !strings.Contains(strings.Join(hdr.Values("Vary"), ","), "Origin") {
				hdr.Add("Vary", "Origin")
			}
			return
		}
	}
}
