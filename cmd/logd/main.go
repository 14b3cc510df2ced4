// Command logd is the logd server and its command-line client.
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/logd/logd/auth/tlsconfig"
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
	root.AddCommand(newVersionCmd(), newServeCmd(), newTopicCmd(), newProduceCmd(), newConsumeCmd(), newOffsetsCmd(), newGroupCmd(), newClusterCmd(), newUserCmd(), newACLCmd(), newKVCmd(), newBenchCmd(), newDLQCmd())
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w (see `%s --help`)", err, cmd.CommandPath())
	})
	return root
}

// serverFlag is --server, --timeout and the TLS flags of client commands.
type serverFlag struct {
	addr    string
	timeout time.Duration
	tls     tlsFlags
	creds   credFlags
}

// tlsFlags are a client's --tls-ca, --tls-cert and --tls-key.
type tlsFlags struct{ ca, cert, key string }

// register adds the flags, their defaults from LOGD_TLS_CA, LOGD_TLS_CERT
// and LOGD_TLS_KEY.
func (t *tlsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&t.ca, "tls-ca", os.Getenv("LOGD_TLS_CA"), "connect over TLS, trusting the CA certificates in this PEM file (env LOGD_TLS_CA)")
	fs.StringVar(&t.cert, "tls-cert", os.Getenv("LOGD_TLS_CERT"), "connect over TLS presenting this client certificate, for a server that requires one (env LOGD_TLS_CERT)")
	fs.StringVar(&t.key, "tls-key", os.Getenv("LOGD_TLS_KEY"), "the private key of --tls-cert (env LOGD_TLS_KEY)")
}

// config is the client's TLS, or nil (plaintext) when no flag is given.
// --tls-cert alone trusts the system's roots.
func (t *tlsFlags) config() (*tls.Config, error) {
	if t.ca == "" && t.cert == "" && t.key == "" {
		return nil, nil
	}
	c, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: t.ca, CertFile: t.cert, KeyFile: t.key})
	if err != nil {
		return nil, fmt.Errorf("--tls-ca, --tls-cert, --tls-key: %w", err)
	}
	return c, nil
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
		"how long to retry while the cluster cannot answer (an election, a node restarting) before giving up; "+
			"with topic create and topic alter --partitions, also how long the cluster may wait for the new partitions' leaders")
	s.tls.register(fs)
	s.creds.register(fs)
}

// setupContext is the context of a call that creates partitions (topic
// create, topic alter --partitions): with --timeout given, the call ends
// then, and the cluster waits for the new partitions' leaders until just
// before it (thousands of partitions take longer than the client's default
// 10 s beyond the call timeout); else cmd's context.
func (s *serverFlag) setupContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	if !cmd.Flags().Changed("timeout") {
		return context.WithCancel(cmd.Context())
	}
	return context.WithTimeout(cmd.Context(), s.timeout)
}

// run dials the server, runs fn, closes the client and explains fn's error.
func (s *serverFlag) run(fn func(c *client.Client) error) error {
	tc, err := s.tls.config()
	if err != nil {
		return err
	}
	opts := []client.Option{client.WithRetryTimeout(s.timeout)}
	if tc != nil {
		opts = append(opts, client.WithTLS(tc))
	}
	co, err := s.creds.option(tc != nil)
	if err != nil {
		return err
	}
	if co != nil {
		opts = append(opts, co)
	}
	c, err := client.Dial(s.addr, opts...)
	if err != nil {
		return fmt.Errorf("invalid --server %q: %v", s.addr, err)
	}
	err = fn(c)
	c.Close()
	return explain(err, s.addr)
}
