package transport

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
)

// writesConn records each Write it is given.
type writesConn struct {
	net.Conn
	writes [][]byte
}

func (w *writesConn) Write(p []byte) (int, error) {
	w.writes = append(w.writes, append([]byte(nil), p...))
	return len(p), nil
}

func header(typ byte, length uint32) []byte {
	h := make([]byte, yamuxHeaderSize)
	h[1] = typ
	binary.BigEndian.PutUint32(h[4:], 7)
	binary.BigEndian.PutUint32(h[8:], length)
	return h
}

// A data frame's header and body reach the connection in one write; a
// header without a body (window update, a data frame of length 0) at once.
func TestCoalescedConnWritesADataFrameInOneWrite(t *testing.T) {
	w := &writesConn{}
	c := newCoalescedConn(w)
	write := func(p []byte) {
		t.Helper()
		if n, err := c.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
		}
	}
	data := header(yamuxTypeData, 3)
	write(data)
	if len(w.writes) != 0 {
		t.Fatalf("the header of a data frame went out alone: %v", w.writes)
	}
	write([]byte("abc"))
	update := header(1, 1<<18) // window update: no body
	write(update)
	empty := header(yamuxTypeData, 0) // data frame with flags only (FIN)
	write(empty)
	want := [][]byte{append(append([]byte(nil), data...), "abc"...), update, empty}
	if len(w.writes) != len(want) {
		t.Fatalf("%d writes, want %d: %q", len(w.writes), len(want), w.writes)
	}
	for i := range want {
		if !bytes.Equal(w.writes[i], want[i]) {
			t.Errorf("write %d: %q, want %q", i, w.writes[i], want[i])
		}
	}
}
