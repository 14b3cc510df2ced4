// Package logging is logd's one logger: log/slog, text or JSON, at a level
// chosen with --log-level; and an hclog.Logger that routes
// hashicorp/raft's (and the replication transport's) logging into it, so a
// node writes one format, at one level, to one place.
//
// Levels follow what an operator should act on. Raft's INFO lines are per
// partition group (one election, one "entering follower state" per group
// on every start) and go to DEBUG; a few WARN lines that are routine (see
// routine) go lower too.
package logging
