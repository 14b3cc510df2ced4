// Package buildinfo is what a logd binary knows about its own build: the
// module version, the VCS revision and time, and the Go version, read once
// from runtime/debug.ReadBuildInfo. `logd version` prints it and the
// server exports it as the logd_build_info gauge, so both say the same.
package buildinfo
