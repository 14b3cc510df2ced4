// Package server is a logd node: the gRPC services of proto/logd/v1 over
// the node's topics (package partition), consumer offsets (package
// offsets) and retention (package retention), plus the HTTP endpoints
// /metrics, /healthz, /readyz and /debug/pprof/.
//
// Errors from the packages below are mapped to gRPC statuses in one place,
// errors.go. Handlers validate every request before touching storage.
package server
