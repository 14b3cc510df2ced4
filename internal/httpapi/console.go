package httpapi

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// consoleFiles is the web console: plain HTML, CSS and JavaScript, no
// build step and nothing loaded from elsewhere, so it works offline.
//
//go:embed console
var consoleFiles embed.FS

// consoleHandler serves the console's files at /.
func (h *Handler) consoleHandler() http.Handler {
	sub, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method %s not allowed on %s: the console is read with GET", r.Method, r.URL.Path)
			return
		}
		// A name fs.FS cannot open (not UTF-8, say) is not a console file:
		// the file server would answer 500.
		if name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/"); name != "" && !fs.ValidPath(name) {
			writeError(w, http.StatusNotFound, "no such page %q: the console is at /, the API under /v1/", r.URL.Path)
			return
		}
		// No other page may frame the console (clickjacking its produce
		// form): frame-ancestors for current browsers, X-Frame-Options for
		// older ones. The console connects to its own node and, for its
		// live tail when that node stops, to the cluster's other nodes
		// (console_nodes.go).
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src "+
			h.consoleConnectSrc(r)+"; frame-ancestors 'none'")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
