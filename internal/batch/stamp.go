package batch

import "encoding/binary"

// maxTimestampOffset is where the header's max timestamp is (a
// log-append-time stamp rewrites it and the attributes, attrOffset).
const maxTimestampOffset = 35

// LogAppendTime reports whether the batch's timestamps are the broker's
// (attribute bit 3): every record's timestamp is then MaxTimestamp.
func (i Info) LogAppendTime() bool { return i.Attributes&attrLogAppendTime != 0 }

// StampLogAppendTime marks c as a log-append-time batch stamped nowMs, as
// Kafka's leader does for a topic whose message.timestamp.type is
// LogAppendTime: the timestamp-type attribute is set, MaxTimestamp becomes
// nowMs (what every record's timestamp reads as) and the CRC is computed
// again. The records are untouched. It rewrites c's bytes in place and
// returns the Checked of the stamped batch.
func StampLogAppendTime(c Checked, nowMs int64) Checked {
	b := c.b
	c.info.Attributes |= attrLogAppendTime
	c.info.MaxTimestamp = nowMs
	binary.BigEndian.PutUint16(b[attrOffset:], uint16(c.info.Attributes))
	binary.BigEndian.PutUint64(b[maxTimestampOffset:], uint64(nowMs))
	c.info.CRC = Checksum(b)
	binary.BigEndian.PutUint32(b[crcOffset:], c.info.CRC)
	return c
}
