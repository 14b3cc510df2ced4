package raftrpc

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// The compact encoding of the commonest frames on an idle link: an
// AppendEntries without entries (heartbeats, commit notices), request
// type rpcEmptyAppend, and every AppendEntries answer, status
// statusAppendOK. Fields in order, each a uvarint; a byte slice is its
// length + 1 (0: nil) and its bytes; a bool one byte:
//
//	empty append: ProtocolVersion ID Addr Term Leader PrevLogEntry
//	              PrevLogTerm LeaderCommitIndex
//	append answer: ProtocolVersion ID Addr Term LastLog Success
//	               NoRetryBackoff
//
// msgpack (reflection over the struct) cost more CPU than everything
// else an idle link does.
//
// An AppendEntries with entries, request type rpcAppend, is the empty
// append's fields followed by the entry count and each entry: Index Term
// Type Data Extensions AppendedAt (Unix nanoseconds as a signed varint, 0:
// the zero time). Its decoded entries' Data and Extensions are the frame's
// own bytes, not copies: the frame reader hands its buffer over with them
// (frameReader.decodeRequest). msgpack copied every entry out of the frame,
// a copy per replicated byte on every follower.
const (
	rpcEmptyAppend byte = 5
	rpcAppend      byte = 6
	statusAppendOK byte = 0x82
)

// minEntrySize is the fewest bytes an entry of an rpcAppend takes: it
// bounds the entry count a frame may claim.
const minEntrySize = 6

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(b))+1)
	return append(dst, b...)
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func appendHeaderFields(dst []byte, h raft.RPCHeader) []byte {
	dst = binary.AppendUvarint(dst, uint64(h.ProtocolVersion))
	dst = appendBytes(dst, h.ID)
	return appendBytes(dst, h.Addr)
}

func appendEmptyAppend(dst []byte, r *raft.AppendEntriesRequest) []byte {
	dst = appendHeaderFields(dst, r.RPCHeader)
	dst = binary.AppendUvarint(dst, r.Term)
	//lint:ignore SA1019 every field is carried, as msgpack does
	dst = appendBytes(dst, r.Leader)
	dst = binary.AppendUvarint(dst, r.PrevLogEntry)
	dst = binary.AppendUvarint(dst, r.PrevLogTerm)
	return binary.AppendUvarint(dst, r.LeaderCommitIndex)
}

// appendAppend appends r's fields and entries to dst; with ext non-nil,
// an entry's Data of minExtent bytes or more is not copied: its length is
// appended to dst and its bytes to *ext, as an extent at that point.
func appendAppend(dst []byte, ext *[]extent, r *raft.AppendEntriesRequest) []byte {
	dst = appendEmptyAppend(dst, r)
	dst = binary.AppendUvarint(dst, uint64(len(r.Entries)))
	for _, e := range r.Entries {
		dst = binary.AppendUvarint(dst, e.Index)
		dst = binary.AppendUvarint(dst, e.Term)
		dst = binary.AppendUvarint(dst, uint64(e.Type))
		if ext != nil && len(e.Data) >= minExtent {
			dst = binary.AppendUvarint(dst, uint64(len(e.Data))+1)
			*ext = append(*ext, extent{at: len(dst), b: e.Data})
		} else {
			dst = appendBytes(dst, e.Data)
		}
		dst = appendBytes(dst, e.Extensions)
		var at int64
		if !e.AppendedAt.IsZero() {
			at = e.AppendedAt.UnixNano()
		}
		dst = binary.AppendVarint(dst, at)
	}
	return dst
}

func appendAppendAnswer(dst []byte, r *raft.AppendEntriesResponse) []byte {
	dst = appendHeaderFields(dst, r.RPCHeader)
	dst = binary.AppendUvarint(dst, r.Term)
	dst = binary.AppendUvarint(dst, r.LastLog)
	dst = appendBool(dst, r.Success)
	return appendBool(dst, r.NoRetryBackoff)
}

// compactReader reads the fields of a compact payload; the first error
// sticks.
type compactReader struct {
	b   []byte
	err error
}

func (r *compactReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad varint", ErrBadFrame)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *compactReader) bytes() []byte {
	if v := r.view(); v != nil {
		return append([]byte{}, v...) // the read buffer is reused
	}
	return nil
}

func (r *compactReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad varint", ErrBadFrame)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// view is bytes without the copy: the result is r's own bytes.
func (r *compactReader) view() []byte {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	n--
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: %d bytes past the end", ErrBadFrame, n)
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

func (r *compactReader) bool() bool {
	if r.err != nil {
		return false
	}
	if len(r.b) == 0 || r.b[0] > 1 {
		r.err = fmt.Errorf("%w: bad bool", ErrBadFrame)
		return false
	}
	v := r.b[0] == 1
	r.b = r.b[1:]
	return v
}

func (r *compactReader) header() raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(r.uvarint()), ID: r.bytes(), Addr: r.bytes()}
}

func (r *compactReader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d bytes after the fields", ErrBadFrame, len(r.b))
	}
	return r.err
}

func decodeEmptyAppend(b []byte) (*raft.AppendEntriesRequest, error) {
	req, rest, err := decodeAppendFields(b)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%w: %d bytes after the fields", ErrBadFrame, len(rest))
	}
	return req, err
}

// decodeAppendFields decodes the fields every append starts with and
// returns the bytes after them.
func decodeAppendFields(b []byte) (*raft.AppendEntriesRequest, []byte, error) {
	r := compactReader{b: b}
	req := &raft.AppendEntriesRequest{RPCHeader: r.header(), Term: r.uvarint()}
	//lint:ignore SA1019 every field is carried, as msgpack does
	req.Leader = r.bytes()
	req.PrevLogEntry = r.uvarint()
	req.PrevLogTerm = r.uvarint()
	req.LeaderCommitIndex = r.uvarint()
	return req, r.b, r.err
}

// decodeAppend decodes an rpcAppend payload; its entries' bytes are b's.
func decodeAppend(b []byte) (*raft.AppendEntriesRequest, error) {
	req, rest, err := decodeAppendFields(b)
	if err != nil {
		return nil, err
	}
	r := compactReader{b: rest}
	n := r.uvarint()
	if r.err == nil && (n == 0 || n > uint64(len(r.b)/minEntrySize)) {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrBadFrame, n, len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	logs := make([]raft.Log, n)
	req.Entries = make([]*raft.Log, n)
	for i := range logs {
		l := &logs[i]
		l.Index, l.Term = r.uvarint(), r.uvarint()
		typ := r.uvarint()
		if typ > 0xff && r.err == nil {
			r.err = fmt.Errorf("%w: entry type %d", ErrBadFrame, typ)
		}
		l.Type = raft.LogType(typ)
		l.Data, l.Extensions = r.view(), r.view()
		if at := r.varint(); at != 0 {
			l.AppendedAt = time.Unix(0, at)
		}
		req.Entries[i] = l
	}
	return req, r.end()
}

func decodeAppendAnswer(b []byte, resp *raft.AppendEntriesResponse) error {
	r := compactReader{b: b}
	resp.RPCHeader = r.header()
	resp.Term = r.uvarint()
	resp.LastLog = r.uvarint()
	resp.Success = r.bool()
	resp.NoRetryBackoff = r.bool()
	return r.end()
}
