// Package importrules holds the test that keeps the import table of
// docs/architecture.md ("Who may import whom") true: every package of the
// module has a row, each row lists exactly the module's packages that
// package imports, no package links what its row says it must never link,
// no production package links a test harness, and no front-end (nor its
// tests) imports log, partition or replication directly. A change of imports
// therefore changes the table in the same commit, so the table is never
// stale. Pebble's internal/lint TestForbiddenImports is the model.
//
// The package has no code; the facts come from `go list -json ./...`.
package importrules
