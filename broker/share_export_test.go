package broker

// SetShareJitter replaces the redelivery backoff's random draw of the
// share partitions b loads from now on: f(n) returns an integer in [0, n].
func SetShareJitter(b *Broker, f func(n int64) int64) {
	b.share.mu.Lock()
	b.share.jitter = f
	b.share.mu.Unlock()
}
