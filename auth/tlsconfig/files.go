package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ErrInvalid is a certificate, key or CA file that cannot be used, or a
// configuration that lacks one; the message names the file.
var ErrInvalid = errors.New("tlsconfig: invalid TLS configuration")

// watched is a value loaded from files that is loaded again when the files
// change. Every handshake calls current, which stats the files (a few
// microseconds, cheap next to a handshake) and reloads when one changed
// since the last attempt; Reload forces it (SIGHUP). A load that fails keeps
// the previous value and is reported, once per change of the files, so a
// half-written rotation never takes a listener down and never floods the
// log.
type watched[T any] struct {
	paths   []string
	load    func() (*T, error)
	onError func(error)

	cur atomic.Pointer[T]

	mu     sync.Mutex
	stamps []os.FileInfo // the files as of the last attempt, good or bad
}

func newWatched[T any](paths []string, load func() (*T, error), onError func(error)) (*watched[T], error) {
	w := &watched[T]{paths: paths, load: load, onError: onError}
	if err := w.Reload(); err != nil {
		return nil, err
	}
	return w, nil
}

// current is the value to use now, reloaded first if the files changed.
func (w *watched[T]) current() *T {
	stamps, err := statAll(w.paths)
	w.mu.Lock()
	if err == nil && !sameStamps(stamps, w.stamps) {
		if err := w.reloadLocked(stamps); err != nil && w.onError != nil {
			w.onError(err)
		}
	}
	w.mu.Unlock()
	return w.cur.Load()
}

// Reload loads the files now, whether or not they look changed. On error the
// previous value stays in use.
func (w *watched[T]) Reload() error {
	if w == nil { // an optional file that is not configured
		return nil
	}
	stamps, err := statAll(w.paths)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reloadLocked(stamps)
}

func (w *watched[T]) reloadLocked(stamps []os.FileInfo) error {
	// Stamps are taken before reading, so what is read is at least as new
	// as what is recorded; a write racing the read is seen as a change on
	// the next handshake and read again.
	w.stamps = stamps
	v, err := w.load()
	if err != nil {
		if w.cur.Load() != nil {
			return fmt.Errorf("%w (still using the previous one)", err)
		}
		return err
	}
	w.cur.Store(v)
	return nil
}

func statAll(paths []string) ([]os.FileInfo, error) {
	out := make([]os.FileInfo, len(paths))
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		out[i] = fi
	}
	return out, nil
}

// sameStamps reports whether no file was replaced (renamed over: a new
// inode), rewritten (size or modification time) since the stamps a.
func sameStamps(a, b []os.FileInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !os.SameFile(a[i], b[i]) || a[i].Size() != b[i].Size() || !a[i].ModTime().Equal(b[i].ModTime()) {
			return false
		}
	}
	return true
}

// loadKeyPair reads a PEM certificate chain and its private key. A pair
// that does not match, or a certificate already expired, is refused: put in
// place by mistake, it would fail every handshake.
func loadKeyPair(certFile, keyFile string) (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate %s, key %s: %v", ErrInvalid, certFile, keyFile, err)
	}
	leaf := c.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%w: certificate %s: %v", ErrInvalid, certFile, err)
		}
		c.Leaf = leaf
	}
	if now := time.Now(); now.After(leaf.NotAfter) {
		return nil, fmt.Errorf("%w: certificate %s expired at %s", ErrInvalid, certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return &c, nil
}

// loadCAPool reads a PEM bundle of CA certificates; a file without one is
// an error (an empty pool would refuse every peer, silently).
func loadCAPool(caFile string) (*x509.CertPool, error) {
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: CA file: %v", ErrInvalid, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%w: CA file %s holds no PEM certificate", ErrInvalid, caFile)
	}
	return pool, nil
}

func watchKeyPair(certFile, keyFile string, onError func(error)) (*watched[tls.Certificate], error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("%w: a certificate needs both a certificate file and a key file (got %q and %q)", ErrInvalid, certFile, keyFile)
	}
	return newWatched([]string{certFile, keyFile}, func() (*tls.Certificate, error) {
		return loadKeyPair(certFile, keyFile)
	}, onError)
}

func watchCAPool(caFile string, onError func(error)) (*watched[x509.CertPool], error) {
	return newWatched([]string{caFile}, func() (*x509.CertPool, error) {
		return loadCAPool(caFile)
	}, onError)
}

// reloadAll reloads each watched value (nil ones are skipped by Reload)
// and joins the errors.
func reloadAll(ws ...interface{ Reload() error }) error {
	var errs []error
	for _, w := range ws {
		errs = append(errs, w.Reload())
	}
	return errors.Join(errs...)
}
