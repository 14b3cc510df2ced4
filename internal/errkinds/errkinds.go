// Package errkinds is the catalogue of the errors the core's packages
// export, for the front-ends' tests: each front-end (Kafka error codes,
// gRPC statuses, HTTP statuses) checks that it maps every one to something
// other than its "unknown" answer (UNKNOWN_SERVER_ERROR, Unknown/Internal,
// 500), but for the few listed as internal faults.
//
// Check also reads the core packages' source and fails when one exports an
// error (a var named Err..., or a type named ...Error) that the catalogue
// does not hold: a new error cannot reach a client as "unknown" unnoticed.
//
// Only tests import this package.
package errkinds

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
	"github.com/logd/logd/replication/raftrpc"
	"github.com/logd/logd/replication/transport"
	"github.com/logd/logd/routing"
	"github.com/logd/logd/txn"
)

// Roots are the core's package trees (relative to the module root), walked
// with their sub-packages: whatever a front-end can receive comes from
// them.
var Roots = []string{"auth", "broker", "cluster", "groups", "internal/batch", "internal/kind", "log", "offsets",
	"partition", "replication", "retention", "routing", "txn"}

// skipped are directories under Roots that are no part of a running node.
var skipped = map[string]string{
	"replication/faultnet":    "a fault-injecting network for tests",
	"replication/clustertest": "an in-process cluster harness for tests",
}

// Kind is one exported error.
type Kind struct {
	Pkg  string // the package's path below the module root
	Name string // ErrX, or a type's name
	Err  error
	// RaftPath: the error arises on the Raft path (the replication
	// packages, Raft's log and snapshot stores, node-to-node links) and
	// reaches a front-end only through cluster.RaftError, which Check
	// applies first.
	RaftPath bool
	// Internal, when set, says why a front-end may answer this error with
	// its unknown code: a fault no request can cause or fix.
	Internal string
}

// ID is the error's qualified name.
func (k Kind) ID() string { return k.Pkg + "." + k.Name }

const (
	corrupt = "stored data does not decode: an internal fault for the operator (logged), not the client's to fix"
	startup = "read at startup from the node's own files and flags; no request reaches it"
)

// All is the catalogue. A re-export (broker.ErrUnknownTopic is
// partition.ErrTopicNotFound) is listed under both names and checked once.
func All() []Kind {
	return slices.Concat(accessKinds(), dataKinds(), raftPath())
}

// accessKinds are the errors of authentication, authorization and the
// control plane.
func accessKinds() []Kind {
	return []Kind{
		{Pkg: "auth", Name: "ErrInvalid", Err: auth.ErrInvalid},
		{Pkg: "auth", Name: "ErrCorrupt", Err: auth.ErrCorrupt, Internal: corrupt},
		{Pkg: "auth", Name: "ErrUnknownUser", Err: auth.ErrUnknownUser},
		{Pkg: "auth", Name: "ErrAuthenticationFailed", Err: auth.ErrAuthenticationFailed},
		{Pkg: "auth", Name: "ErrUnauthenticated", Err: auth.ErrUnauthenticated},
		{Pkg: "auth", Name: "ErrPlaintextCredentials", Err: auth.ErrPlaintextCredentials},
		{Pkg: "auth", Name: "ErrMechanism", Err: auth.ErrMechanism},
		{Pkg: "auth", Name: "ErrDenied", Err: auth.ErrDenied},
		{Pkg: "auth", Name: "DeniedError", Err: &auth.DeniedError{Resource: auth.Topic("t")}},
		{Pkg: "auth", Name: "AuthenticationError", Err: &auth.AuthenticationError{User: "u"}},
		{Pkg: "auth/tlsconfig", Name: "ErrInvalid", Err: tlsconfig.ErrInvalid, Internal: startup},

		{Pkg: "broker", Name: "ErrUnknownTopic", Err: broker.ErrUnknownTopic},
		{Pkg: "broker", Name: "ErrUnknownPartition", Err: broker.ErrUnknownPartition},
		{Pkg: "broker", Name: "ErrTopicExists", Err: broker.ErrTopicExists},
		{Pkg: "broker", Name: "ErrInvalidBatch", Err: broker.ErrInvalidBatch},
		{Pkg: "broker", Name: "ErrBatchTooLarge", Err: broker.ErrBatchTooLarge},
		{Pkg: "broker", Name: "ErrNotEnoughReplicas", Err: broker.ErrNotEnoughReplicas},
		{Pkg: "broker", Name: "ErrDiskFull", Err: broker.ErrDiskFull},
		{Pkg: "broker", Name: "ErrDenied", Err: broker.ErrDenied},
		{Pkg: "broker", Name: "ErrUserExists", Err: broker.ErrUserExists},
		{Pkg: "broker", Name: "ErrUnknownUser", Err: broker.ErrUnknownUser},
		{Pkg: "broker", Name: "ErrUnknownNode", Err: broker.ErrUnknownNode},
		{Pkg: "broker", Name: "ErrTopicNotReady", Err: broker.ErrTopicNotReady},
		{Pkg: "broker", Name: "ErrGroupSubscribed", Err: broker.ErrGroupSubscribed},
		{Pkg: "broker", Name: "ErrElectionNotNeeded", Err: broker.ErrElectionNotNeeded},
		{Pkg: "broker", Name: "ErrStaleMemberEpoch", Err: broker.ErrStaleMemberEpoch},
		{Pkg: "broker", Name: "NotCoordinatorError", Err: &broker.NotCoordinatorError{}},
		{Pkg: "broker", Name: "NotLeaderError", Err: &broker.NotLeaderError{What: "the cluster metadata"}},
		{Pkg: "broker", Name: "OutOfRangeError", Err: &broker.OutOfRangeError{Offset: -1, StartOffset: 3, HighWatermark: 5}},
		{Pkg: "broker", Name: "KeyConflictError", Err: &broker.KeyConflictError{Topic: "t", Key: []byte("k"), Latest: 7, Expected: 3}},
		// Re-exports of partition's and log's errors (broker/types.go), so that
		// the front-ends import the broker only.
		{Pkg: "broker", Name: "ErrInvalidConfig", Err: broker.ErrInvalidConfig},
		{Pkg: "broker", Name: "ErrOutOfOrderSequence", Err: broker.ErrOutOfOrderSequence},
		{Pkg: "broker", Name: "ErrPartitionClosed", Err: broker.ErrPartitionClosed},
		{Pkg: "broker", Name: "ErrLogClosed", Err: broker.ErrLogClosed},
		{Pkg: "broker", Name: "ErrOffsetOutOfRange", Err: broker.ErrOffsetOutOfRange},
		{Pkg: "broker", Name: "ErrLogInvalidBatch", Err: broker.ErrLogInvalidBatch},
		{Pkg: "broker", Name: "ErrLogCorrupt", Err: broker.ErrLogCorrupt, Internal: corrupt},

		{Pkg: "cluster", Name: "ErrUnknownNode", Err: cluster.ErrUnknownNode},
		{Pkg: "cluster", Name: "ErrTopicNotReady", Err: cluster.ErrTopicNotReady},
		// A kind another node named that this one does not know (a node of
		// another version): unavailable.
		{Pkg: "cluster", Name: "PeerError", Err: &cluster.PeerError{Kind: "newer_kind", Message: "m"}},

		{Pkg: "internal/kind", Name: "ErrInvalidArgument", Err: kind.ErrInvalidArgument},
		{Pkg: "internal/kind", Name: "ErrFailedPrecondition", Err: kind.ErrFailedPrecondition},
		{Pkg: "internal/kind", Name: "ErrUnavailable", Err: kind.ErrUnavailable},
		{Pkg: "internal/kind", Name: "ErrNoLeader", Err: kind.ErrNoLeader},
		{Pkg: "internal/kind", Name: "ErrShuttingDown", Err: kind.ErrShuttingDown},
		{Pkg: "cluster", Name: "NotLeaderError", Err: &cluster.NotLeaderError{What: "partition t/0", Leader: meta.Node{ID: "n2"}}},
	}
}

// dataKinds are the errors of groups, offsets, topics and their logs.
func dataKinds() []Kind {
	return []Kind{

		{Pkg: "groups", Name: "ErrUnknownMember", Err: groups.ErrUnknownMember},
		{Pkg: "groups", Name: "ErrIllegalGeneration", Err: groups.ErrIllegalGeneration},
		{Pkg: "groups", Name: "ErrRebalanceInProgress", Err: groups.ErrRebalanceInProgress},
		{Pkg: "groups", Name: "ErrInconsistentProtocol", Err: groups.ErrInconsistentProtocol},
		{Pkg: "groups", Name: "ErrInvalidSessionTimeout", Err: groups.ErrInvalidSessionTimeout},
		{Pkg: "groups", Name: "ErrInvalidGroup", Err: groups.ErrInvalidGroup},
		{Pkg: "groups", Name: "ErrUnknownAssignor", Err: groups.ErrUnknownAssignor},
		{Pkg: "groups", Name: "ErrGroupNotFound", Err: groups.ErrGroupNotFound},
		{Pkg: "groups", Name: "ErrGroupNotEmpty", Err: groups.ErrGroupNotEmpty},
		{Pkg: "groups", Name: "ErrCoordinatorClosed", Err: groups.ErrCoordinatorClosed},
		{Pkg: "groups", Name: "GenerationError", Err: &groups.GenerationError{Group: "g", Current: 2}},

		{Pkg: "internal/batch", Name: "ErrCorrupt", Err: batch.ErrCorrupt},
		{Pkg: "internal/batch", Name: "ErrShort", Err: batch.ErrShort},
		{Pkg: "internal/batch", Name: "ErrUnsupported", Err: batch.ErrUnsupported},

		{Pkg: "log", Name: "ErrCorrupt", Err: log.ErrCorrupt, Internal: corrupt},
		{Pkg: "log", Name: "ErrOffsetOutOfRange", Err: log.ErrOffsetOutOfRange},
		{Pkg: "log", Name: "ErrClosed", Err: log.ErrClosed},
		{Pkg: "log", Name: "ErrNotFound", Err: log.ErrNotFound, RaftPath: true},
		{Pkg: "log", Name: "ErrInvalidBatch", Err: log.ErrInvalidBatch},
		{Pkg: "log", Name: "ErrInstall", Err: log.ErrInstall, RaftPath: true},
		{Pkg: "log", Name: "OutOfRangeError", Err: &log.OutOfRangeError{Offset: 9, StartOffset: 0, HighWatermark: 5}},

		{Pkg: "offsets", Name: "ErrInvalidArgument", Err: offsets.ErrInvalidArgument},
		{Pkg: "offsets", Name: "ErrInvalidReset", Err: offsets.ErrInvalidReset},
		{Pkg: "offsets", Name: "ErrCorrupt", Err: offsets.ErrCorrupt, Internal: corrupt},
		{Pkg: "offsets", Name: "ErrGenerationTaken", Err: offsets.ErrGenerationTaken},
		{Pkg: "offsets", Name: "GenerationTakenError", Err: &offsets.GenerationTakenError{Group: "g", Asked: 1, Recorded: 2}},

		{Pkg: "partition", Name: "ErrTopicNotFound", Err: partition.ErrTopicNotFound},
		{Pkg: "partition", Name: "ErrTopicExists", Err: partition.ErrTopicExists},
		{Pkg: "partition", Name: "ErrPartitionNotFound", Err: partition.ErrPartitionNotFound},
		{Pkg: "partition", Name: "ErrInvalidConfig", Err: partition.ErrInvalidConfig},
		{Pkg: "partition", Name: "ErrOutOfOrderSequence", Err: partition.ErrOutOfOrderSequence},
		{Pkg: "partition", Name: "ErrClosed", Err: partition.ErrClosed},

		{Pkg: "routing", Name: "ErrInvalidTopicName", Err: routing.ErrInvalidTopicName},

		{Pkg: "txn", Name: "Error", Err: &txn.Error{Code: txn.CodeProducerFenced, Msg: "fenced"}},
		{Pkg: "broker", Name: "TxnError", Err: &broker.TxnError{Code: txn.CodeConcurrent, Msg: "ending"}},
	}
}

// raftPath are the replication packages' errors: cluster.RaftError turns
// each into a kind above before it leaves the core.
func raftPath() []Kind {
	ks := []Kind{
		{Pkg: "replication", Name: "ErrBadCommand", Err: replication.ErrBadCommand},
		{Pkg: "replication", Name: "ErrNotBatch", Err: replication.ErrNotBatch},
		{Pkg: "replication", Name: "ErrDeleteRange", Err: replication.ErrDeleteRange},
		{Pkg: "replication", Name: "ErrOffsetGap", Err: replication.ErrOffsetGap},
		{Pkg: "replication", Name: "ErrNotLeader", Err: replication.ErrNotLeader},
		{Pkg: "replication", Name: "ErrOutcomeUnknown", Err: replication.ErrOutcomeUnknown},
		{Pkg: "replication", Name: "ErrKeyNotFound", Err: replication.ErrKeyNotFound},
		{Pkg: "replication", Name: "ErrOutOfOrder", Err: replication.ErrOutOfOrder},
		{Pkg: "replication", Name: "ErrNotReady", Err: replication.ErrNotReady},
		{Pkg: "replication", Name: "ErrAsleep", Err: replication.ErrAsleep},
		{Pkg: "replication", Name: "NotLeaderError", Err: &replication.NotLeaderError{Group: "g", Cause: raft.ErrNotLeader}},
		// Also turned into ErrFailedPrecondition by the join that meets it.
		{Pkg: "replication/meta", Name: "ErrNodeRemoved", Err: meta.ErrNodeRemoved},
		// Met only by the cluster's own record of its id (cluster/identity.go).
		{Pkg: "replication/meta", Name: "ErrClusterIDSet", Err: meta.ErrClusterIDSet, Internal: "met only by the cluster's own record of its id, at a metadata leader's start; no request reaches it"},
		{Pkg: "replication/raftrpc", Name: "ErrBadFrame", Err: raftrpc.ErrBadFrame},
		{Pkg: "replication/raftrpc", Name: "ErrClosed", Err: raftrpc.ErrClosed},
		{Pkg: "replication/raftrpc", Name: "ErrBusy", Err: raftrpc.ErrBusy},
		{Pkg: "replication/raftrpc", Name: "RemoteError", Err: &raftrpc.RemoteError{Msg: "x"}},
		{Pkg: "replication/transport", Name: "ErrClosed", Err: transport.ErrClosed},
		{Pkg: "replication/transport", Name: "ErrUnknownGroup", Err: transport.ErrUnknownGroup},
		{Pkg: "replication/transport", Name: "ErrBusy", Err: transport.ErrBusy},
		{Pkg: "replication/transport", Name: "ErrBadHeader", Err: transport.ErrBadHeader},
		{Pkg: "replication/transport", Name: "ErrGroupExists", Err: transport.ErrGroupExists},
		{Pkg: "replication/transport", Name: "ErrInvalidGroup", Err: transport.ErrInvalidGroup},
		{Pkg: "replication/transport", Name: "ErrOtherCluster", Err: transport.ErrOtherCluster},
		{Pkg: "replication/transport", Name: "ClusterMismatchError", Err: &transport.ClusterMismatchError{Local: "a", Remote: "b"}},
	}
	for i := range ks {
		ks[i].RaftPath = true
	}
	return ks
}

// Others are errors of outside packages the core passes on; checked like
// the catalogue's, not found by the walk.
func Others() []Kind {
	return []Kind{
		{Pkg: "context", Name: "Canceled", Err: context.Canceled},
		{Pkg: "context", Name: "DeadlineExceeded", Err: context.DeadlineExceeded},
		{Pkg: "syscall", Name: "ENOSPC", Err: syscall.ENOSPC},
		{Pkg: "syscall", Name: "EMFILE", Err: syscall.EMFILE},
		{Pkg: "syscall", Name: "ENFILE", Err: syscall.ENFILE},
	}
}

// Check fails t for every exported error of the core's packages (read
// from the source under root, the module root) that All does not hold,
// and for every error of All and Others, as a front-end receives it
// (wrapped with context, as the core does), that unknown says the
// front-end answers with its unknown code (what tells it).
func Check(t testing.TB, root string, unknown func(error) (answer string, isUnknown bool)) {
	t.Helper()
	kinds := All()
	held := map[string]bool{}
	for _, k := range kinds {
		held[k.ID()] = true
	}
	found, err := Exported(root)
	if err != nil {
		t.Fatalf("reading the core's source: %v", err)
	}
	for _, id := range found {
		if !held[id] {
			pkg, name, _ := strings.Cut(id, ".")
			t.Errorf("new exported error %s in package %s: add it to the table (internal/errkinds) and map it in every front-end", name, pkg)
		}
	}
	raftErr := new(cluster.Cluster)
	seen := map[error]bool{}
	for _, k := range append(kinds, Others()...) {
		if seen[k.Err] || k.Internal != "" {
			continue
		}
		seen[k.Err] = true
		got := k.Err
		if k.RaftPath {
			got = raftErr.RaftError(got)
		}
		for _, e := range []error{got, wrapped(got)} {
			if answer, bad := unknown(e); bad {
				t.Errorf("%s (%q) is answered %s: map it to what the client should do", k.ID(), e.Error(), answer)
				break
			}
		}
	}
}

// wrapped is err with context, as the core returns its errors.
func wrapped(err error) error { return errors.Join(errors.New("doing a thing"), err) }

// Exported lists the exported error variables (Err...) and error types
// (...Error) declared in the non-test source of the packages under
// Roots, as "pkg.Name", sorted.
func Exported(root string) ([]string, error) {
	var ids []string
	for _, r := range Roots {
		err := filepath.WalkDir(filepath.Join(root, r), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if d.Name() == "testdata" || skipped[rel] != "" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
				return nil
			}
			names, err := exportedErrors(path)
			for _, n := range names {
				ids = append(ids, filepath.ToSlash(filepath.Dir(rel))+"."+n)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// exportedErrors are the error names file declares at top level.
func exportedErrors(file string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if g.Tok == token.VAR && n.IsExported() && isErrName(n.Name) {
						names = append(names, n.Name)
					}
				}
			case *ast.TypeSpec:
				if s.Name.IsExported() && strings.HasSuffix(s.Name.Name, "Error") {
					names = append(names, s.Name.Name)
				}
			}
		}
	}
	return names, nil
}

// isErrName: Err followed by an upper-case letter (ErrX, not Errorf).
func isErrName(n string) bool {
	return len(n) > 3 && strings.HasPrefix(n, "Err") && n[3] >= 'A' && n[3] <= 'Z'
}
