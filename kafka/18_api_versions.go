package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleAPIVersions answers with the table in versions.go.
func handleAPIVersions(s *Server, r *request) func() kmsg.Response {
	resp := r.kreq.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = advertised()
	return func() kmsg.Response { return resp }
}

// unsupportedAPIVersions answers an ApiVersions request at a version this
// listener does not speak: UNSUPPORTED_VERSION and the table, in v0's
// format, which every client can read (KIP-511).
func unsupportedAPIVersions(h header) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = advertised()
	return resp
}
