package broker

import "time"

// SetCleanerClock makes the cleaner measure lags and tombstone horizons
// from now.
func SetCleanerClock(b *Broker, now func() time.Time) { b.cleaner.now.Store(&now) }

// ConsumerGroupWrites is how many records of server-assigned groups b
// wrote.
func ConsumerGroupWrites(b *Broker) uint64 {
	b.consumers.mu.Lock()
	defer b.consumers.mu.Unlock()
	return b.consumers.writes
}
