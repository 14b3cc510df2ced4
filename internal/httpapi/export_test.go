package httpapi

import (
	"testing"
	"time"
)

// The headless browser of browser_test.go, for the tests of package
// httpapi_test (which start real nodes).

// BrowserPage is a page of headless chromium.
type BrowserPage = browserPage

// OpenPage opens pageURL in headless chromium, stopped at the test's end.
func OpenPage(t *testing.T, pageURL string) *BrowserPage { return openPage(t, pageURL) }

// Eval returns a JavaScript expression's value as a string.
func (p *browserPage) Eval(t *testing.T, expr string) string { return p.eval(t, expr) }

// WaitText waits until the element's text contains want.
func (p *browserPage) WaitText(t *testing.T, selector, want string, timeout time.Duration) {
	t.Helper()
	p.waitText(t, selector, want, timeout)
}

// Screenshot saves the page as a PNG.
func (p *browserPage) Screenshot(t *testing.T, path string) { p.screenshot(t, path) }
