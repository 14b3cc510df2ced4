package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// --http-allowed-origins reaches the server's config as a list, from the
// command line or a config file, and a value that is not an origin is
// refused with the form wanted.
func TestServeHTTPAllowedOrigins(t *testing.T) {
	parse := func(args ...string) (serveFlags, error) {
		var fl serveFlags
		cmd := &cobra.Command{}
		fl.register(cmd.Flags())
		return fl, cmd.Flags().Parse(args)
	}
	fl, err := parse("--http-allowed-origins", " https://ops.example.com, http://localhost:3000 ,")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fl.nodeConfig()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://ops.example.com", "http://localhost:3000"}; !slices.Equal(cfg.HTTPAllowedOrigins, want) {
		t.Fatalf("HTTPAllowedOrigins = %q, want %q", cfg.HTTPAllowedOrigins, want)
	}
	var none serveFlags
	none.register((&cobra.Command{}).Flags())
	if cfg, err := none.nodeConfig(); err != nil || len(cfg.HTTPAllowedOrigins) != 0 {
		t.Fatalf("default: %q, %v", cfg.HTTPAllowedOrigins, err)
	}
	fl, err = parse("--http-allowed-origins", "https://ops.example.com,ops2.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fl.nodeConfig(); err == nil || !strings.Contains(err.Error(), "--http-allowed-origins") ||
		!strings.Contains(err.Error(), "ops2.example.com") || !strings.Contains(err.Error(), "scheme://host[:port]") {
		t.Fatalf("an origin without scheme: %v", err)
	}
}
