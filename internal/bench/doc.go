// Package bench measures a running logd through the Go client, the way a
// user's application would: `logd bench produce|consume|e2e`.
//
//   - produce: Producers independent producers (one connection each) append
//     Records records of RecordSize bytes, keyed over Keys keys (none when
//     0), at an offered Rate (records/s over all producers; 0 = as fast as
//     acknowledgements allow). Latency is per record, from its intended send
//     time (so a stalled server is not hidden: no coordinated omission) to
//     its acknowledgement.
//   - consume: one consumer reads the topic from the earliest offset to the
//     high watermark it found at start (catch-up read). Latency is per Poll.
//   - e2e: a consumer tails the topic while producers append; each value
//     starts with its send time, and latency is send-to-consume.
//
// MB is 10^6 bytes of record values (keys and framing not counted).
package bench
