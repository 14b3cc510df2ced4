package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want Info
	}{
		{"none", nil, Info{Version: Unknown, Revision: Unknown, Time: Unknown}},
		{"release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T09:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			Info{Version: "v1.2.0", Revision: "abc123", Time: "2026-12-01T09:00:00Z", GoVersion: "go1.26.8"}},
		{"dirty checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}},
			Info{Version: "(devel)", Revision: "abc123-dirty", Time: Unknown, GoVersion: "go1.26.8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fromBuildInfo(tc.bi, tc.bi != nil)
			if tc.want.GoVersion == "" {
				tc.want.GoVersion = got.GoVersion // runtime.Version()
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestGetNamesTheGoVersion(t *testing.T) {
	if in := Get(); !strings.HasPrefix(in.GoVersion, "go") || !strings.Contains(in.String(), in.GoVersion) {
		t.Fatalf("%+v: %s", in, in)
	}
}
