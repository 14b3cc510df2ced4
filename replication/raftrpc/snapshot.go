package raftrpc

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// snapshotTimeoutScale: InstallSnapshot's deadline is Timeout per this
// many bytes of snapshot (at least Timeout), as NetworkTransport's.
const snapshotTimeoutScale = 256 << 10

// InstallSnapshot streams a snapshot to target over a connection of the
// group's own stream layer (see the package doc) and waits for the answer.
func (t *Transport) InstallSnapshot(_ raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	if t.snaps == nil {
		return fmt.Errorf("raftrpc: group %s: no stream layer for snapshots", t.id)
	}
	timeout := t.hub.cfg.Timeout
	conn, err := t.snaps.Dial(target, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(max(timeout, timeout*time.Duration(args.Size/snapshotTimeoutScale))))
	w := bufio.NewWriterSize(conn, 64<<10)
	w.WriteByte(SnapshotMagic)
	enc := codec.NewEncoder(w, handle)
	if err := enc.Encode(args); err != nil {
		return fmt.Errorf("raftrpc: install snapshot on %s: %w", target, err)
	}
	if _, err := io.Copy(w, data); err != nil {
		return fmt.Errorf("raftrpc: install snapshot on %s: %w", target, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("raftrpc: install snapshot on %s: %w", target, err)
	}
	dec := codec.NewDecoder(bufio.NewReader(conn), handle)
	var msg string
	if err := dec.Decode(&msg); err != nil {
		return fmt.Errorf("raftrpc: install snapshot on %s: %w", target, err)
	}
	if msg != "" {
		return &RemoteError{Msg: msg}
	}
	if err := dec.Decode(resp); err != nil {
		return fmt.Errorf("raftrpc: install snapshot on %s: %w", target, err)
	}
	return nil
}

// ServeSnapshot serves one InstallSnapshot connection whose first byte,
// SnapshotMagic, was read: it hands the request and its data to Raft and
// writes back Raft's answer. It closes c.
func (t *Transport) ServeSnapshot(c net.Conn) {
	defer c.Close()
	t.qmu.Lock()
	if t.closed {
		t.qmu.Unlock()
		return
	}
	t.wg.Add(1)
	t.qmu.Unlock()
	defer t.wg.Done()
	// Close fails a read or write blocked on c.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-t.done:
			c.SetDeadline(time.Now())
		case <-stop:
		}
	}()
	r := bufio.NewReader(c)
	var req raft.InstallSnapshotRequest
	if err := codec.NewDecoder(r, handle).Decode(&req); err != nil {
		t.hub.log.Warn("bad snapshot request", "group", t.id, "remote", c.RemoteAddr(), "error", err)
		return
	}
	ch := make(chan raft.RPCResponse, 1)
	res := t.handle(inbound{rpc: raft.RPC{Command: &req, Reader: io.LimitReader(r, req.Size), RespChan: ch}, resp: ch})
	msg := ""
	if res.Error != nil {
		msg = res.Error.Error()
	}
	w := bufio.NewWriter(c)
	enc := codec.NewEncoder(w, handle)
	if enc.Encode(msg) == nil && enc.Encode(res.Response) == nil {
		w.Flush()
	}
}
