// Package kind holds the generic kinds of error the core answers with, the
// ones no single package owns: a request that is wrong (ErrInvalidArgument),
// that this state refuses (ErrFailedPrecondition), that may succeed on a
// retry (ErrUnavailable, ErrNoLeader), or that reached a stopping node
// (ErrShuttingDown). An error is "of a kind" when errors.Is matches it;
// Errorf makes one whose message is its own text, without the kind's name.
//
// The package is a leaf (it imports only the standard library), so the
// control plane (cluster), the core (broker) and every front-end name the
// same values without importing one another for them. Kinds is the closed
// set: each front-end maps it once (Of picks the kind of an error), then its
// own packages' sentinels (partition.ErrTopicNotFound, groups.Err..., ...).
//
// The name is the word the code already used for these values ("an error
// of kind ErrUnavailable"); internal/errkinds, a different package, is the
// test-only catalogue of every error the core exports.
package kind
