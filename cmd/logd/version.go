package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/logd/logd/internal/buildinfo"
)

// newVersionCmd is `logd version`; `logd --version` prints the same line.
func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the module version, VCS revision and time, and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in := buildinfo.Get()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(in)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), in)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: version, revision, time, go_version")
	return cmd
}
