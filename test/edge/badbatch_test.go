package edge

import (
	"encoding/base64"
	"encoding/binary"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	pb "github.com/logd/logd/proto/logd/v1"
)

// issue17Batch is issue 17's grpcurl batch: one record whose value length
// says 10^9 bytes, with its CRC recomputed so that it passes the CRC check.
const issue17Batch = "AAAAAAAAAAAAAAA9AAAAAAKe4XrZAAAAAAAAAAABi8/laAAAAAGLz+VoAP//////////////////AAAAARYAAAACa4Co1rkHAA=="

// recrc rewrites the CRC of a batch edited in place.
func recrc(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	return b
}

// TestMalformedBatchRefusedAtProduce reproduces issue 17's item 1 against
// the binary: `printf 'a\nb\n' | logd produce t`, then batches whose CRC is
// right but whose records are not (a value length of 10^9, a key length of
// -5) or that carry the transactional bit. Each is refused with
// INVALID_ARGUMENT, and the records before them stay readable through the
// decoding paths (Fetch decode=true and `logd consume`).
func TestMalformedBatchRefusedAtProduce(t *testing.T) {
	s := startServer(t, 0)
	bin := logdBinary(t)
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--server", s.addr)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("logd %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("", "topic", "create", "t")
	run("a\nb\n", "produce", "t")

	issue, err := base64.StdEncoding.DecodeString(issue17Batch)
	if err != nil {
		t.Fatal(err)
	}
	one := func() []byte {
		return batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("v")}})
	}
	negKey := one()
	negKey[batch.HeaderSize+4] = 9 // key length varint: -1 (null) becomes -5
	txn := one()
	txn[22] |= 0x10
	logc := pb.NewLogClient(s.dial())
	p0 := int32(0)
	for name, b := range map[string][]byte{"value length 10^9": issue, "key length -5": recrc(negKey), "transactional bit": recrc(txn)} {
		_, err := logc.Produce(timeout(t, 10*time.Second), &pb.ProduceRequest{Topic: "t", Partition: &p0, Batch: b})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("produce of a batch with %s: %v, want INVALID_ARGUMENT", name, err)
		}
	}

	f, err := logc.Fetch(timeout(t, 10*time.Second), &pb.FetchRequest{Topic: "t", Offset: 0, Decode: true})
	if err != nil {
		t.Fatalf("Fetch decode=true from 0 after the bad batches: %v", err)
	}
	if len(f.Records) != 2 || f.HighWatermark != 2 {
		t.Fatalf("Fetch decode=true: %d records, high watermark %d; want a and b only", len(f.Records), f.HighWatermark)
	}
	if out := run("", "consume", "t"); out != "a\nb\n" {
		t.Fatalf("logd consume t printed %q, want a and b", out)
	}
}
