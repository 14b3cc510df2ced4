package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// Unknown stands for a field the build did not record (a build with
// -buildvcs=false has no revision, a test binary no module version).
const Unknown = "unknown"

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`  // module version, e.g. v1.2.0, or (devel)
	Revision  string `json:"revision"` // VCS commit, with "-dirty" when modified
	Time      string `json:"time"`     // VCS commit time, RFC 3339
	GoVersion string `json:"go_version"`
}

var (
	once sync.Once
	info Info
)

// Get returns the running binary's build information.
func Get() Info {
	once.Do(func() {
		bi, ok := debug.ReadBuildInfo()
		info = fromBuildInfo(bi, ok)
	})
	return info
}

func fromBuildInfo(bi *debug.BuildInfo, ok bool) Info {
	in := Info{Version: Unknown, Revision: Unknown, Time: Unknown, GoVersion: runtime.Version()}
	if !ok || bi == nil {
		return in
	}
	if v := bi.Main.Version; v != "" {
		in.Version = v
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && in.Revision != Unknown {
		in.Revision += "-dirty"
	}
	return in
}

// String is the one line `logd version` prints.
func (in Info) String() string {
	return fmt.Sprintf("logd %s (revision %s, %s, built with %s)", in.Version, in.Revision, in.Time, in.GoVersion)
}
