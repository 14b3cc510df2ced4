// Command logd is the logd server and its command-line client.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/buildinfo"
)

// defaultServer is where client commands connect without --server or
// LOGD_SERVER.
const defaultServer = "127.0.0.1:7070"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "logd:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "logd",
		Short:         "logd: an append-only, partitioned, replicated log stream server",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints what `logd version` prints.
		Version: buildinfo.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newVersionCmd(), newServeCmd(), newTopicCmd(), newProduceCmd(), newConsumeCmd(), newOffsetsCmd(), newGroupCmd(), newClusterCmd(), newBenchCmd())
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w (see `%s --help`)", err, cmd.CommandPath())
	})
	return root
}

// serverFlag is --server and --timeout of client commands.
type serverFlag struct {
	addr    string
	timeout time.Duration
}

func (s *serverFlag) register(cmd *cobra.Command, persistent bool) {
	def := defaultServer
	if env := os.Getenv("LOGD_SERVER"); env != "" {
		def = env
	}
	fs := cmd.Flags()
	if persistent {
		fs = cmd.PersistentFlags()
	}
	fs.StringVar(&s.addr, "server", def, "logd server address HOST:PORT, or several separated by commas (env LOGD_SERVER)")
	fs.DurationVar(&s.timeout, "timeout", client.DefaultRetryTimeout,
		"how long to retry while the cluster cannot answer (an election, a node restarting) before giving up")
}

// run dials the server, runs fn, closes the client and explains fn's error.
func (s *serverFlag) run(fn func(c *client.Client) error) error {
	c, err := client.Dial(s.addr, client.WithRetryTimeout(s.timeout))
	if err != nil {
		return fmt.Errorf("invalid --server %q: %v", s.addr, err)
	}
	err = fn(c)
	c.Close()
	return explain(err, s.addr)
}
