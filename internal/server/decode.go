package server

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	pb "github.com/logd/logd/proto/logd/v1"
)

// fetchResponse is the FetchResponse of a partition's read from offset,
// and with decode its records. A stored batch that does not decode (one
// stored before produce validated every record) costs a reader only its
// own records: the response stops before it, and a read that starts at it
// fails with corruptBatch, naming the offsets to skip to.
func fetchResponse(fp broker.FetchedPartition, offset int64, decode bool) (*pb.FetchResponse, error) {
	resp := &pb.FetchResponse{Topic: fp.Topic, Partition: fp.Partition, NextOffset: fp.NextOffset,
		LogStartOffset: fp.LogStart, HighWatermark: fp.HighWatermark, Batches: fp.Batches}
	if !decode || len(fp.Batches) == 0 {
		return resp, nil
	}
	resp.NextOffset = offset
	used := 0
	err := batch.Split(fp.Batches, func(one []byte, info batch.Info) error {
		_, recs, err := batch.Decode(one, offset)
		if err != nil {
			if used == 0 {
				return corruptBatch(fmt.Sprintf("%s-%d", fp.Topic, fp.Partition), info, err)
			}
			return errStopRead
		}
		appendRecords(resp, recs)
		used += len(one)
		resp.NextOffset = info.NextOffset()
		return nil
	})
	if err != nil && !errors.Is(err, errStopRead) {
		return nil, err
	}
	resp.Batches = fp.Batches[:used]
	return resp, nil
}

// errStopRead ends a Split early: what comes next is left to the next read.
var errStopRead = errors.New("stop")

// appendRecords adds decoded records to resp. A header key that is not
// UTF-8 (refused at produce since batch.Validate checks it, but possible
// in batches stored before) has its bad bytes replaced by U+FFFD, as
// Kafka's Java client does, because the API's header key is a proto
// string: carrying the bytes would fail the whole response.
func appendRecords(resp *pb.FetchResponse, recs []batch.Record) {
	for _, r := range recs {
		pr := &pb.Record{Offset: r.Offset, Key: r.Key, Value: r.Value, TimestampMs: r.Timestamp}
		for _, h := range r.Headers {
			k := h.Key
			if !utf8.ValidString(k) {
				k = strings.ToValidUTF8(k, "\uFFFD")
			}
			pr.Headers = append(pr.Headers, &pb.Header{Key: k, Value: h.Value})
		}
		resp.Records = append(resp.Records, pr)
	}
}
