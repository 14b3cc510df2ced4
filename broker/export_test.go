package broker

import "time"

// SetCleanerClock makes the cleaner measure lags and tombstone horizons
// from now.
func SetCleanerClock(b *Broker, now func() time.Time) { b.cleaner.now.Store(&now) }
