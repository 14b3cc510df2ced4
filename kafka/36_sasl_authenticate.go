package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// handleSaslAuthenticate carries one step of the exchange SaslHandshake
// began. A failed login is answered SASL_AUTHENTICATION_FAILED with a
// message that is the same for a wrong password and an unknown user, then
// the connection closes. Sessions do not expire (SessionLifetimeMillis 0:
// no re-authentication, KIP-368).
func handleSaslAuthenticate(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	out, err := r.c.stepSASL(req.SASLAuthBytes)
	resp.SASLAuthBytes = out
	if err != nil {
		resp.ErrorCode = saslErrorCode(err)
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		r.fatal = err
	}
	return func() kmsg.Response { return resp }
}

// saslErrorCode is the code of a failed SaslAuthenticate.
func saslErrorCode(err error) int16 {
	if errors.Is(err, auth.ErrAuthenticationFailed) || errors.Is(err, auth.ErrUnauthenticated) {
		return kerr.SaslAuthenticationFailed.Code
	}
	return kerr.IllegalSaslState.Code
}
