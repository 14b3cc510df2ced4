package httpapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
)

// TestE2EReadsCompressedBatches: records a Kafka producer stored in a
// zstd batch (as sent, still compressed) read back over HTTP.
func TestE2EReadsCompressedBatches(t *testing.T) {
	e := newBrokerEnv(t).(brokerEnv)
	e.createTopic(t, "z", 1)
	var recs []batch.Record
	for i := range 3 {
		recs = append(recs, batch.Record{Timestamp: 1000, Key: []byte("k"), Value: []byte(fmt.Sprint("zstd value ", i))})
	}
	plain := batch.Encode(nil, 0, batch.NoProducer, recs)
	comp, err := kgo.DefaultCompressor(kgo.ZstdCompression())
	if err != nil {
		t.Fatal(err)
	}
	out, codec := comp.Compress(new(bytes.Buffer), plain[batch.HeaderSize:])
	b := append(bytes.Clone(plain[:batch.HeaderSize]), out...)
	binary.BigEndian.PutUint16(b[21:], uint16(codec))
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	if _, err := e.b.Produce(context.Background(), broker.ProduceRequest{Topic: "z", Batch: b, Acks: broker.AcksAll}); err != nil {
		t.Fatal(err)
	}
	srv, _ := serve(t, e.core(), Config{})
	var rr readResp
	if st := do(t, "GET", srv.URL+"/v1/topics/z/records?partition=0&offset=0&max=10", "", nil, &rr); st != http.StatusOK {
		t.Fatalf("read: %d", st)
	}
	if len(rr.Records) != 3 {
		t.Fatalf("read %d records, want 3: %+v", len(rr.Records), rr)
	}
	for i, r := range rr.Records {
		if r.Offset != int64(i) || *r.Key != "k" || *r.Value != fmt.Sprint("zstd value ", i) {
			t.Fatalf("record %d read back as %+v", i, r)
		}
	}
}
