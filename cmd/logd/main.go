// Command logd is the logd server and its command-line client.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "logd",
		Short:         "logd: an append-only, partitioned, replicated log stream server",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "logd:", err)
		os.Exit(1)
	}
}
