package torture

// TxnOp is one transaction of the transactional workload: the records a
// producer instance wrote to several partitions, the group offsets it
// committed inside the transaction (TxnOffsetCommit), and how it ended.
type TxnOp struct {
	// ID names the transaction; its records' values carry it.
	ID string `json:"id"`
	// TxnID is the transactional id; Instance the producer instance (a
	// new instance of a transactional id fences the older ones).
	TxnID    string `json:"txn_id"`
	Instance int    `json:"instance"`
	// Writes are the records produced, with the offsets acknowledged.
	Writes []TxnWrite `json:"writes"`
	// Offsets are the group offsets committed in the transaction, by
	// partition.
	Offsets map[int32]int64 `json:"offsets,omitempty"`
	// Commit is true when the producer asked to commit (false: abort, or
	// it crashed before ending the transaction).
	Commit bool `json:"commit"`
	// Outcome is what the producer learnt of its end: OutcomeOK for a
	// commit or abort acknowledged, OutcomeFail when it is known not to
	// have committed, OutcomeUnknown otherwise.
	Outcome Outcome `json:"outcome"`
	// Invoke and Complete bound the transaction (monotonic nanoseconds);
	// End is when its EndTxn was sent.
	Invoke   int64 `json:"invoke"`
	End      int64 `json:"end"`
	Complete int64 `json:"complete"`
}

// TxnWrite is one record of a transaction.
type TxnWrite struct {
	Partition int32  `json:"partition"`
	Value     string `json:"value"`
	// Acked is true when the produce was acknowledged, at AckTime with
	// Offset; Invoke is when it was sent.
	Acked   bool  `json:"acked"`
	Offset  int64 `json:"offset"`
	Invoke  int64 `json:"invoke"`
	AckTime int64 `json:"ack_time"`
}

// committed reports whether the producer learnt the transaction committed.
func (t *TxnOp) committed() bool { return t.Commit && t.Outcome == OutcomeOK }

// mayCommit reports whether the transaction may have committed.
func (t *TxnOp) mayCommit() bool { return t.Commit && t.Outcome != OutcomeFail }

// TxnRead is one read_committed read of a partition from From up to End
// (the fetch position it reached, at most the LSO it saw).
type TxnRead struct {
	Partition int32       `json:"partition"`
	From      int64       `json:"from"`
	End       int64       `json:"end"`
	Records   []TxnRecord `json:"records"`
	Invoke    int64       `json:"invoke"`
	Complete  int64       `json:"complete"`
	// Final marks the reads after the nemeses healed and every
	// transaction ended.
	Final bool `json:"final,omitempty"`
}

// TxnRecord is a record a read returned.
type TxnRecord struct {
	Offset int64  `json:"offset"`
	Value  string `json:"value"`
}

// TxnOffsetRead is a read of a group's committed offset of a partition
// (OffsetFetch, read_committed).
type TxnOffsetRead struct {
	TxnID     string `json:"txn_id"`
	Partition int32  `json:"partition"`
	// Offset is the committed offset read, -1 for none.
	Offset   int64 `json:"offset"`
	Invoke   int64 `json:"invoke"`
	Complete int64 `json:"complete"`
}

// TxnFence is a new producer instance of TxnID initialised (InitProducerID
// answered) at Time: every older instance is fenced from then on.
type TxnFence struct {
	TxnID    string `json:"txn_id"`
	Instance int    `json:"instance"`
	Time     int64  `json:"time"`
}

// TxnHistory is what the transactional workload records.
type TxnHistory struct {
	Txns    []TxnOp         `json:"txns"`
	Reads   []TxnRead       `json:"reads"`
	Offsets []TxnOffsetRead `json:"offsets"`
	Fences  []TxnFence      `json:"fences"`
}
