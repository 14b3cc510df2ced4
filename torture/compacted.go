package torture

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/logd/logd/client"
)

// The compacted-topic workload (compacted_run.go) runs beside the main
// one, on a topic of its own whose cleanup.policy is compact: producers
// write values and tombstones of a few hundred keys, scanners read the
// whole topic from its start now and then, and after the run two final
// scans read it once more. It records into a KVHistory of its own, so the
// main checkers never see it; CheckCompacted judges it.

// CompactedConfig configures the compacted-topic workload. Zero values
// take the defaults.
type CompactedConfig struct {
	Topic string // default "torture-compacted"
	// Partitions: default 1, so that its Raft group reaches a snapshot
	// (8,192 entries by default), the bound below which a replica
	// compacts, within a few minutes of a loaded machine's run.
	Partitions int32
	Producers  int // default 2
	// Keys are shared out among the producers: key i is producer
	// i%Producers's, so a key's writes are one producer's, in its order
	// (default 200).
	Keys int
	// ProduceRate is each producer's writes per second (default 100).
	ProduceRate int
	// MaxOutstanding bounds a producer's writes not yet acknowledged or
	// failed (default 32).
	MaxOutstanding int
	// TombstoneEvery: one write in TombstoneEvery is a tombstone (default
	// 8).
	TombstoneEvery int
	// Scanners read the topic from its start, one scan every ScanEvery
	// (defaults 1 and 2s).
	Scanners  int
	ScanEvery time.Duration
	// The topic's configuration: small segments, so that segments close
	// (and the cleaner is kicked) often; a min.compaction.lag above the
	// producers' delivery timeout (docs/compaction.md: a retry of a batch
	// the cleaner removed is not recognised after a restart); a short
	// delete.retention, so that tombstones expire within a run; and a low
	// dirty ratio. Defaults 16 KiB, 10s, 5s, 0.1.
	SegmentBytes     int64
	MinCompactionLag time.Duration
	DeleteRetention  time.Duration
	DirtyRatio       float64
}

func (c *CompactedConfig) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Topic == "" {
		c.Topic = "torture-compacted"
	}
	if c.Partitions <= 0 {
		c.Partitions = 1
	}
	def(&c.Producers, 2)
	def(&c.Keys, 200)
	c.Keys = max(c.Keys, c.Producers)
	def(&c.ProduceRate, 100)
	def(&c.MaxOutstanding, 32)
	def(&c.TombstoneEvery, 8)
	def(&c.Scanners, 1)
	if c.ScanEvery <= 0 {
		c.ScanEvery = 2 * time.Second
	}
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = 16 << 10
	}
	if c.MinCompactionLag <= 0 {
		c.MinCompactionLag = 10 * time.Second
	}
	if c.DeleteRetention <= 0 {
		c.DeleteRetention = 5 * time.Second
	}
	if c.DirtyRatio <= 0 {
		c.DirtyRatio = 0.1
	}
}

// topicConfig is the compacted topic's configuration.
func (c *CompactedConfig) topicConfig() client.TopicConfig {
	return client.TopicConfig{
		RetentionTime: client.Unlimited, RetentionBytes: client.Unlimited, RetentionRecords: client.Unlimited,
		SegmentBytes: c.SegmentBytes, CleanupPolicy: "compact", MinCompactionLag: c.MinCompactionLag,
		DeleteRetention: c.DeleteRetention, MinCleanableDirtyRatio: c.DirtyRatio,
	}
}

// KVOpKind is what an operation of the compacted workload did.
type KVOpKind string

const (
	// KVPut wrote Seq as Key's value (the value "Key/Seq").
	KVPut KVOpKind = "put"
	// KVDelete wrote a tombstone of Key (a null value; its Seq travels in
	// the header "seq").
	KVDelete KVOpKind = "delete"
	// KVScan read every partition from its start to the high watermark it
	// had when the scan began: Records, in each partition's offset order.
	// Final (1, 2) marks the scans after the run.
	KVScan KVOpKind = "scan"
)

// KVOp is one operation of a KVHistory. Times are nanoseconds since the
// main History began.
type KVOp struct {
	ID       int      `json:"id"`
	Process  int      `json:"process"`
	Kind     KVOpKind `json:"kind"`
	Invoke   int64    `json:"invoke_ns"`
	Complete int64    `json:"complete_ns"`
	Outcome  Outcome  `json:"outcome"`
	Err      string   `json:"err,omitempty"`

	// Writes: the key, its sequence number, and where an acknowledged
	// write landed (Offset -1: acknowledged as a retry of a batch too old
	// for its offsets to be known).
	Key       string `json:"key,omitempty"`
	Seq       int64  `json:"seq,omitempty"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Duplicate bool   `json:"duplicate,omitempty"`

	Records []KVRecord `json:"records,omitempty"`
	Final   int        `json:"final,omitempty"`
}

// KVRecord is one record a scan read.
type KVRecord struct {
	Partition int32  `json:"p"`
	Offset    int64  `json:"o"`
	Key       string `json:"k"`
	Seq       int64  `json:"s"`
	Tombstone bool   `json:"t,omitempty"`
	// Bad is the record's value (or header) when it is not one the
	// workload writes: a key and sequence it cannot name.
	Bad string `json:"bad,omitempty"`
}

func (op KVOp) String() string {
	t := fmt.Sprintf("[%s %s]", time.Duration(op.Invoke), time.Duration(op.Complete))
	res := string(op.Outcome)
	if op.Err != "" {
		res += " (" + op.Err + ")"
	}
	if op.Kind != KVScan {
		if op.Outcome == OutcomeOK {
			res = fmt.Sprintf("ok %d/%d", op.Partition, op.Offset)
		}
		return fmt.Sprintf("#%d %s p%d %s %s/%d -> %s", op.ID, t, op.Process, op.Kind, op.Key, op.Seq, res)
	}
	final := ""
	if op.Final > 0 {
		final = fmt.Sprintf(" final %d", op.Final)
	}
	return fmt.Sprintf("#%d %s p%d scan%s -> %s, %d records", op.ID, t, op.Process, final, res, len(op.Records))
}

// KVHistory records the compacted workload's operations from many
// goroutines, on the clock of the main History.
type KVHistory struct{ opHistory[KVOp] }

// NewKVHistory is a history whose times are h's.
func NewKVHistory(h *History) *KVHistory {
	return &KVHistory{opHistory[KVOp]{now: h.Now, id: func(op *KVOp) *int { return &op.ID }}}
}

// kvHeaderSeq is the header that carries a tombstone's sequence number.
const kvHeaderSeq = "seq"

// kvRecord is the record of a write: the value "key/seq", or for a
// tombstone a null value and the header seq.
func kvRecord(topic string, op KVOp) client.Record {
	rec := client.Record{Topic: topic, Key: []byte(op.Key)}
	if op.Kind == KVDelete {
		rec.Headers = []client.Header{{Key: kvHeaderSeq, Value: []byte(strconv.FormatInt(op.Seq, 10))}}
	} else {
		rec.Value = []byte(op.Key + "/" + strconv.FormatInt(op.Seq, 10))
	}
	return rec
}

// parseKVRecord is what a consumed record says of its write.
func parseKVRecord(r client.ConsumedRecord) KVRecord {
	out := KVRecord{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key)}
	if len(r.Value) == 0 {
		out.Tombstone = true
		for _, h := range r.Headers {
			if h.Key == kvHeaderSeq {
				seq, err := strconv.ParseInt(string(h.Value), 10, 64)
				if err != nil {
					out.Bad = "tombstone header seq=" + string(h.Value)
				}
				out.Seq = seq
				return out
			}
		}
		out.Bad = "tombstone without a seq header"
		return out
	}
	k, s, ok := strings.Cut(string(r.Value), "/")
	seq, err := strconv.ParseInt(s, 10, 64)
	if !ok || err != nil || k != out.Key {
		out.Bad = string(r.Value)
	}
	out.Seq = seq
	return out
}

// kvKey is the name of key i.
func kvKey(i int) string { return fmt.Sprintf("ck%03d", i) }
