package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleAPIVersions answers with the table in versions.go and, from v3
// (KIP-584), the features: transaction.version 2 (KIP-890 part 2), which
// a client that speaks it takes as leave to add partitions by producing,
// groups by committing offsets and to have the epoch bumped at each
// EndTxn (txn.go).
func handleAPIVersions(s *Server, r *request) func() kmsg.Response {
	resp := r.kreq.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = advertised()
	resp.SupportedFeatures, resp.FinalizedFeaturesEpoch, resp.FinalizedFeatures = features()
	return func() kmsg.Response { return resp }
}

// transactionVersion is the transaction.version feature's level logd
// runs at: 2, the level of KIP-890 part 2.
const transactionVersion = 2

// features are the features ApiVersions answers: each supported from 0
// and finalized at its level. They are the same on every node and never
// change while it runs, so their epoch is constant.
func features() ([]kmsg.ApiVersionsResponseSupportedFeature, int64, []kmsg.ApiVersionsResponseFinalizedFeature) {
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = "transaction.version", 0, transactionVersion
	ff := kmsg.NewApiVersionsResponseFinalizedFeature()
	ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = "transaction.version", transactionVersion, transactionVersion
	return []kmsg.ApiVersionsResponseSupportedFeature{sf}, 1, []kmsg.ApiVersionsResponseFinalizedFeature{ff}
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
