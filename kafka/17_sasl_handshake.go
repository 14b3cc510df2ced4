package kafka

import "github.com/twmb/franz-go/pkg/kmsg"

// handleSaslHandshake begins a SASL exchange with the client's mechanism,
// answering with the mechanisms this connection may use (PLAIN only over
// TLS). v1 is followed by SaslAuthenticate requests; v0 by the exchange's
// tokens as bare size-prefixed frames (readLegacyToken). A refused
// handshake is answered, then the connection closes, as in Kafka.
func handleSaslHandshake(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode, r.fatal = r.c.startSASL(req.Mechanism, req.Version == 0)
	resp.SupportedMechanisms = r.c.mechanisms()
	return func() kmsg.Response { return resp }
}
