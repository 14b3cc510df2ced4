package server

import "errors"

// Server is a running node.
type Server struct{ addr string }

// Start opens the data directory and starts serving.
func Start(cfg Config) (*Server, error) { return nil, errors.New("server: not implemented yet") }

// Addr is the gRPC address the server listens on.
func (s *Server) Addr() string { return s.addr }

// HTTPAddr is the HTTP address, or "" without one.
func (s *Server) HTTPAddr() string { return "" }

// Close stops the server gracefully: stop accepting, finish in-flight
// appends, fsync, close.
func (s *Server) Close() error { return nil }
