package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/client"
)

// explain turns an error of a client command into one plain sentence that
// says what went wrong and what to do. gRPC statuses lose their
// "rpc error: code = ... desc =" wrapping; the context the client added
// (which call, which topic) is kept.
func explain(err error, server string) error {
	if err == nil {
		return nil
	}
	if e, ok := explainClient(err, server); ok {
		return e
	}
	// The innermost status: status.FromError would fold the wrapping text
	// into its message.
	var se interface {
		error
		GRPCStatus() *status.Status
	}
	if !errors.As(err, &se) {
		return err
	}
	st := se.GRPCStatus()
	// What the client added around the status, e.g. `describe topic "x": `.
	prefix := strings.TrimSuffix(err.Error(), se.Error())
	if prefix == err.Error() {
		prefix = ""
	}
	msg := st.Message()
	var s string
	switch st.Code() {
	case codes.Unavailable:
		// A produce retried until its delivery timeout: its last attempt
		// may have gone to the one node that is down while the others
		// answered, so it is not evidence that nothing listens.
		retried := strings.Contains(prefix, "retrying") || errors.Is(err, client.ErrDeliveryTimeout)
		if errors.Is(err, client.ErrUnreachable) && !retried {
			// No node answered at all, not even once.
			return fmt.Errorf("cannot reach logd at %s: is `logd serve` running? (choose the server with --server or LOGD_SERVER)", server)
		}
		s = fmt.Sprintf("logd at %s is unavailable: %s", server, msg)
		switch {
		case retried:
			s += " (raise --timeout to wait longer)"
		case !strings.Contains(msg, "retry"):
			s += "; retry in a moment"
		}
	case codes.DeadlineExceeded:
		s = fmt.Sprintf("timed out waiting for logd at %s (%s); check that the server is healthy and retry", server, msg)
	case codes.NotFound, codes.AlreadyExists, codes.InvalidArgument:
		return errors.New(msg) // the server's message names the topic or field
	case codes.FailedPrecondition, codes.OutOfRange:
		s = msg
	case codes.ResourceExhausted:
		s = msg + " (send smaller records or batches, or raise the server's --max-batch-bytes)"
	case codes.Unimplemented:
		s = fmt.Sprintf("the server at %s does not support this request (%s): is it an older logd?", server, msg)
	case codes.Unauthenticated, codes.PermissionDenied:
		s = "the server refused the request: " + msg
	case codes.Canceled:
		s = "cancelled"
	default:
		s = fmt.Sprintf("logd at %s failed: %s (%s); see the server's log", server, msg, st.Code())
	}
	return errors.New(prefix + s)
}

// explainClient is explain for the errors the client names itself (not a
// gRPC status); ok is false for the others.
func explainClient(err error, server string) (_ error, ok bool) {
	var oor *client.OutOfRangeError
	var wrong *client.WrongProtocolError
	switch {
	case errors.As(err, &oor):
		if oor.LogStartOffset > oor.Offset {
			return fmt.Errorf("offset %d of %s/%d was removed by retention: the partition now starts at %d and ends at %d; use --from earliest (or an offset in that range)",
				oor.Offset, oor.Topic, oor.Partition, oor.LogStartOffset, oor.HighWatermark), true
		}
		return fmt.Errorf("offset %d of %s/%d is past the end of the partition (%d); use --from latest to wait for new records",
			oor.Offset, oor.Topic, oor.Partition, oor.HighWatermark), true
	case errors.Is(err, client.ErrBufferFull), errors.Is(err, client.ErrRecordTooLarge), errors.Is(err, client.ErrInvalidRecord):
		return err, true
	case errors.As(err, &wrong):
		role := "a node's HTTP port (serve --http-addr: the JSON API, console and metrics)"
		if wrong.Protocol == "Kafka" {
			role = "a node's Kafka listener (serve --kafka-addr), for Kafka clients"
		}
		return fmt.Errorf("%s answers %s: it is %s, not the API the CLI uses; give --server the node's --addr (default %s)", wrong.Addr, wrong.Protocol, role, defaultServer), true
	case errors.Is(err, client.ErrClientCertificateRequired):
		return fmt.Errorf("logd at %s requires a client certificate: give --tls-cert and --tls-key (or LOGD_TLS_CERT and LOGD_TLS_KEY)", server), true
	case errors.Is(err, client.ErrUnreachable) && strings.Contains(err.Error(), client.HintPlaintextToTLS):
		return fmt.Errorf("logd at %s closed the connection before answering: it probably serves TLS; give --tls-ca (and --tls-cert and --tls-key if it requires client certificates), or LOGD_TLS_CA", server), true
	case errors.Is(err, client.ErrUnreachable) && strings.Contains(err.Error(), "tls:"), errors.Is(err, client.ErrUnreachable) && strings.Contains(err.Error(), "x509:"):
		return fmt.Errorf("TLS with logd at %s failed: %s (check --tls-ca, --tls-cert and --tls-key)", server, tlsReason(err.Error())), true
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("timed out waiting for logd at %s: %v; check that the server is healthy and retry", server, err), true
	}
	return nil, false
}

// tlsReason is the part of a connection error from the TLS or x509 error on.
func tlsReason(msg string) string {
	for _, p := range []string{"tls:", "x509:"} {
		if i := strings.Index(msg, p); i >= 0 {
			return strings.TrimRight(msg[i:], `"`)
		}
	}
	return msg
}
