package server

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/partition"
	pb "github.com/logd/logd/proto/logd/v1"
)

// fillResponse sets resp's batches (b, read at offset) and next offset,
// and with decode its records. A stored batch that does not decode (one
// stored before produce validated every record) costs a reader only its
// own records: the response stops before it, and a read that starts at it
// fails with corruptBatch, naming the offsets to skip to. It returns the
// number of records in the batches resp keeps.
func fillResponse(p *partition.Partition, resp *pb.FetchResponse, b []byte, offset int64, decode bool) (int, error) {
	records, used := 0, 0
	err := batch.Split(b, func(one []byte, info batch.Info) error {
		if decode {
			_, recs, err := batch.Decode(one, offset)
			if err != nil {
				if used == 0 {
					return corruptBatch(p, info, err)
				}
				return errStopRead
			}
			appendRecords(resp, recs)
		}
		used += len(one)
		resp.NextOffset = info.NextOffset()
		records += int(info.NumRecords)
		return nil
	})
	if err != nil && err != errStopRead {
		if _, ok := status.FromError(err); ok {
			return 0, err
		}
		return 0, status.Errorf(codes.DataLoss, "fetch %s at offset %d: stored batch unreadable: %v", p.Name(), offset, err)
	}
	resp.Batches = b[:used]
	return records, nil
}

// errStopRead ends a Split early: what comes next is left to the next read.
var errStopRead = status.Error(codes.Aborted, "stop")

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

// corruptBatch is the DATA_LOSS status of a read that starts at a stored
// batch that does not decode, with the batch's offsets in an ErrorInfo
// (reason CORRUPT_BATCH) so a reader can skip past it.
func corruptBatch(p *partition.Partition, info batch.Info, err error) error {
	st := status.Newf(codes.DataLoss,
		"%s: the stored batch at offsets %d to %d does not decode (%v): its records cannot be read; read from offset %d to skip it",
		p.Name(), info.BaseOffset, info.LastOffset(), err, info.NextOffset())
	st2, derr := st.WithDetails(&errdetails.ErrorInfo{
		Reason: "CORRUPT_BATCH",
		Domain: errorDomain,
		Metadata: map[string]string{
			"first_offset": strconv.FormatInt(info.BaseOffset, 10),
			"last_offset":  strconv.FormatInt(info.LastOffset(), 10),
			"next_offset":  strconv.FormatInt(info.NextOffset(), 10),
		},
	})
	if derr != nil {
		return st.Err()
	}
	return st2.Err()
}
