package torture

// ShareProduce is a record the share workload's producer wrote to the
// share topic: its value is unique, Partition and Offset are where it was
// acknowledged (OutcomeOK only).
type ShareProduce struct {
	Value     string  `json:"value"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Outcome   Outcome `json:"outcome"`
	Err       string  `json:"err,omitempty"`
	Invoke    int64   `json:"invoke"`
	Complete  int64   `json:"complete"`
}

// ShareDelivery is a record a poll of a share member returned: the member
// holds it, with the delivery count the broker answered.
type ShareDelivery struct {
	Member    string `json:"member"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`
	Count     int32  `json:"count"`
	// Invoke is when the poll began, Time when it returned the record.
	Invoke int64 `json:"invoke"`
	Time   int64 `json:"time"`
	// Final marks the drain's deliveries, after the faults stopped.
	Final bool `json:"final,omitempty"`
}

// Share acknowledgement types, as the member asked.
const (
	ShareAccept  = "accept"
	ShareRelease = "release"
	ShareReject  = "reject"
)

// ShareAckEntry is one record a member acknowledged: the delivery (its
// count) it answers, and how.
type ShareAckEntry struct {
	Offset int64  `json:"offset"`
	Count  int32  `json:"count"`
	Type   string `json:"type"`
}

// ShareAck is a member's acknowledgements of one partition, flushed
// together. A partition's acknowledgements are applied all or none, so
// one outcome holds for all: OutcomeOK when the broker answered them
// applied, OutcomeFail when it refused them as records the member did not
// hold (which franz-go also answers when a resent copy of an applied
// request is refused: applied or not), OutcomeUnknown otherwise.
type ShareAck struct {
	Member    string          `json:"member"`
	Partition int32           `json:"partition"`
	Entries   []ShareAckEntry `json:"entries"`
	Outcome   Outcome         `json:"outcome"`
	Err       string          `json:"err,omitempty"`
	Invoke    int64           `json:"invoke"`
	Complete  int64           `json:"complete"`
}

// ShareFinal is what the run learnt of a partition after the drain: its
// high watermark (End) and the share partition's start offset (Start; -1
// when no node answered it).
type ShareFinal struct {
	Partition int32 `json:"partition"`
	Start     int64 `json:"start"`
	End       int64 `json:"end"`
}

// ShareDeadLetter is a record found in the group's dead-letter topic
// after the drain: the source record it names (its headers) and its
// value and delivery count.
type ShareDeadLetter struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`
	Count     int32  `json:"count"`
	Reason    string `json:"reason,omitempty"`
}

// ShareHistory is what the share-group workload records. Limit is the
// group's share.delivery.attempt.limit.
type ShareHistory struct {
	Limit int32 `json:"limit"`
	// Keys is the number of keys of an ordered workload (0: unordered).
	Keys       int             `json:"keys,omitempty"`
	Produces   []ShareProduce  `json:"produces"`
	Deliveries []ShareDelivery `json:"deliveries"`
	Acks       []ShareAck      `json:"acks"`
	// Crashes counts the members that stopped without acknowledging what
	// they held (their connections cut, then closed).
	Crashes int `json:"crashes"`
	// PollErrors counts the errors polls returned, by member kind (run or
	// drain) and message (numbers replaced by N).
	PollErrors map[string]int `json:"poll_errors,omitempty"`
	Final      []ShareFinal   `json:"final,omitempty"`
	// DeadLetters is the dead-letter topic's records after the drain;
	// DeadLettersRead says it was read to its end.
	DeadLetters     []ShareDeadLetter `json:"dead_letters,omitempty"`
	DeadLettersRead bool              `json:"dead_letters_read,omitempty"`
}
