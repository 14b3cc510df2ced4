package edge

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	pb "github.com/logd/logd/proto/logd/v1"
)

// issue17Batch is issue 17's grpcurl batch: one record whose value length
// says 10^9 bytes, with its CRC recomputed so that it passes the CRC check.
const issue17Batch = "AAAAAAAAAAAAAAA9AAAAAAKe4XrZAAAAAAAAAAABi8/laAAAAAGLz+VoAP//////////////////AAAAARYAAAACa4Co1rkHAA=="

// logdCLI runs a client command of the binary against s, with stdin, and
// returns its stdout and stderr; a failure fails the test.
func logdCLI(t *testing.T, s *server, stdin string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(logdBinary(t), append(args, "--server", s.addr)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("logd %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

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
	logdCLI(t, s, "", "topic", "create", "t")
	logdCLI(t, s, "a\nb\n", "produce", "t")

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
	if out, _ := logdCLI(t, s, "", "consume", "t"); out != "a\nb\n" {
		t.Fatalf("logd consume t printed %q, want a and b", out)
	}
}

// TestReadersSkipAStoredBadBatch: a bad batch stored by a logd that did not
// validate records (written here into the partition's log while the server
// is stopped) costs readers its own records only: `logd consume` prints
// the records before and after it and reports it on stderr, Fetch
// decode=true reads up to it and past it.
func TestReadersSkipAStoredBadBatch(t *testing.T) {
	dir := t.TempDir()
	s := startServerIn(t, dir)
	logdCLI(t, s, "", "topic", "create", "t")
	logdCLI(t, s, "a\nb\n", "produce", "t")
	s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.exited
	l, err := log.Open(filepath.Join(dir, "partitions", "t-0"), log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := base64.StdEncoding.DecodeString(issue17Batch)
	good := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("c")}})
	for _, b := range [][]byte{bad, good} {
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	s = startServerIn(t, dir)
	out, stderr := logdCLI(t, s, "", "consume", "t")
	if out != "a\nb\nc\n" || !strings.Contains(stderr, "offsets 2 to 2") {
		t.Fatalf("logd consume t: stdout %q, stderr %q; want a, b and c, and the skipped batch named", out, stderr)
	}
	logc := pb.NewLogClient(s.dial())
	f, err := logc.Fetch(timeout(t, 10*time.Second), &pb.FetchRequest{Topic: "t", Offset: 0, Decode: true})
	if err != nil || len(f.Records) != 2 || f.NextOffset != 2 {
		t.Fatalf("Fetch decode=true from 0: %v, %d records, next offset %d; want a and b, then 2", err, len(f.Records), f.NextOffset)
	}
	if _, err := logc.Fetch(timeout(t, 10*time.Second), &pb.FetchRequest{Topic: "t", Offset: 2, Decode: true}); status.Code(err) != codes.DataLoss || !strings.Contains(err.Error(), "offset 3 to skip") {
		t.Fatalf("Fetch decode=true at the bad batch: %v, want DATA_LOSS saying to read from 3", err)
	}
}
