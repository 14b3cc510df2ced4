package batch

import "sync/atomic"

// checksumHook, when set, sees every batch whose CRC-32C Checksum
// computes.
var checksumHook atomic.Pointer[func(b []byte)]

// SetChecksumHook makes fn see every batch whose CRC-32C this package
// computes (Checksum: Verify, CheckFrame, Validate, Encode), with the
// batch's bytes, until it is called again; nil removes it. It is for tests:
// counting the calls proves how often a node checks a batch. fn runs in
// the goroutine that checks and must not block.
func SetChecksumHook(fn func(b []byte)) {
	if fn == nil {
		checksumHook.Store(nil)
		return
	}
	checksumHook.Store(&fn)
}
