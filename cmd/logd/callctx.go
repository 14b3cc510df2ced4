package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

// callContext is the context of a client command's calls: cmd's, and, when
// --timeout is given, one that retries an unreachable cluster for all of
// it, as --timeout promises ("a node restarting"). Without it, a cluster
// that never answered fails after client.StartupGrace: most often a wrong
// address, or no `logd serve` at all.
func callContext(cmd *cobra.Command) context.Context {
	ctx := cmd.Context()
	if f := cmd.Flags().Lookup("timeout"); f != nil && f.Changed {
		ctx = client.RetryUnreachable(ctx)
	}
	return ctx
}
