package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newServeCmd is `logd serve`.
func newServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run a logd node",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("not implemented yet")
		},
	}
}
