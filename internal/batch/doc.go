// Package batch is logd's one codec for record batches: Kafka's v2 record
// batch ("magic 2"), the unit that producers send, the log stores and
// consumers receive.
//
// Every other package frames, checks and decodes batches through this one, so
// the rules below exist once.
//
// # Layout
//
// All integers are big-endian. The CRC is CRC-32C (Castagnoli) over bytes 21
// to the end of the batch, so the base offset and the partition leader epoch
// can be rewritten in place without recomputing it: the log assigns the base
// offset at append time and stores the Raft term in the epoch field.
//
//	offset size field
//	     0    8 base offset            (rewritten by the log; outside the CRC)
//	     8    4 batch length           (bytes after this field: size - 12)
//	    12    4 partition leader epoch (logd: Raft term; outside the CRC)
//	    16    1 magic                  (2)
//	    17    4 CRC-32C of bytes 21..end
//	    21    2 attributes             (bits 0-2 compression, 3 timestamp type,
//	                                    4 transactional, 5 control)
//	    23    4 last offset delta      (record count - 1; more in a batch
//	                                    the cleaner rewrote: Rewrite)
//	    27    8 first timestamp        (ms since the Unix epoch)
//	    35    8 max timestamp
//	    43    8 producer id            (-1: not idempotent)
//	    51    2 producer epoch
//	    53    4 first sequence
//	    57    4 record count
//	    61    … records, each varint-length-prefixed (kmsg.Record)
//
// # Compression
//
// Attributes codec 1 (gzip), 2 (snappy: one raw block, or xerial-framed
// blocks), 3 (lz4 frame) and 4 (zstd) compress everything after the header:
// the records, as above. Batches are stored and served exactly as sent
// (CRC unchanged, never re-encoded); Validate and Decode decompress them,
// with the codecs franz-go uses (klauspost/compress, pierrec/lz4), refusing
// a payload that expands past MaxExpansion times its size (at least 4 MiB,
// at most MaxDecompressedBytes) so a zip bomb cannot take memory. Encode
// writes uncompressed batches only, as does Rewrite, which re-encodes the
// records a compacted batch keeps (offset deltas increasing, with gaps).
//
// Encoding and decoding of the header and of records use
// github.com/twmb/franz-go/pkg/kmsg; this package adds the checks (length,
// magic, CRC, counts) and returns errors, never panics, on any input.
package batch
