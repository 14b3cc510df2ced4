package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/logd/logd/internal/bench"
)

// newBenchCmd is `logd bench produce|consume|e2e`.
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput and latency of a running logd",
		Long: `Measure a running logd through the Go client, as an application would.

  produce  append --records records of --record-size bytes (over --keys keys,
           from --producers producers, at --rate records/s or as fast as acknowledged)
  consume  read the topic from the earliest offset to its end (catch-up)
  e2e      produce while a consumer tails the topic: append-to-consume latency

It prints records/s, MB/s (10^6 bytes of values) and latency percentiles; with
--json the last line is one JSON object.`,
	}
	for _, mode := range []string{"produce", "consume", "e2e"} {
		cmd.AddCommand(newBenchModeCmd(mode))
	}
	return cmd
}

// checkBenchOptions refuses what a benchmark cannot run with and sets the
// acks asked.
func checkBenchOptions(o *bench.Options, acks string) error {
	var err error
	if o.Acks, err = parseAcks(acks); err != nil {
		return err
	}
	for name, v := range map[string]int{"--records": o.Records, "--record-size": o.RecordSize, "--partitions": o.Partitions, "--producers": o.Producers} {
		if v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", name, v)
		}
	}
	if o.Keys < 0 || o.Rate < 0 {
		return fmt.Errorf("--keys and --rate must be >= 0")
	}
	return nil
}

func newBenchModeCmd(mode string) *cobra.Command {
	var (
		srv     serverFlag
		o       bench.Options
		acks    string
		asJSON  bool
		cpuProf string
	)
	cmd := &cobra.Command{
		Use:   mode,
		Short: "Benchmark " + mode,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkBenchOptions(&o, acks); err != nil {
				return err
			}
			if cpuProf != "" {
				f, err := os.Create(cpuProf)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			o.Server = srv.addr
			o.Progress = os.Stderr
			ctx := callContext(cmd)
			var (
				r   bench.Result
				err error
			)
			switch mode {
			case "produce":
				r, err = bench.Produce(ctx, o)
			case "consume":
				r, err = bench.Consume(ctx, o)
			case "e2e":
				r, err = bench.E2E(ctx, o)
			}
			if err != nil {
				return explain(err, srv.addr)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %s\n", mode, r)
			if asJSON {
				return json.NewEncoder(out).Encode(r)
			}
			return nil
		},
	}
	srv.register(cmd, false)
	f := cmd.Flags()
	f.StringVar(&o.Topic, "topic", "bench", "topic (created if missing)")
	f.IntVar(&o.Records, "records", 1_000_000, "records to produce or consume")
	f.IntVar(&o.RecordSize, "record-size", 100, "bytes of each record's value")
	f.IntVar(&o.Keys, "keys", 0, "distinct keys (0: unkeyed)")
	f.IntVar(&o.Partitions, "partitions", 1, "partitions of the topic when it is created")
	f.IntVar(&o.Producers, "producers", 1, "concurrent producers, one connection each")
	f.StringVar(&acks, "acks", "", "leader or all (default: the server's)")
	f.IntVar(&o.Rate, "rate", 0, "offered records/s over all producers (0: unlimited); use it to measure latency")
	f.DurationVar(&o.Linger, "linger", 0, "producer linger (0: the client's default)")
	f.BoolVar(&asJSON, "json", false, "print the summary as one JSON object on the last line")
	f.StringVar(&cpuProf, "cpuprofile", "", "write the client's CPU profile to this file")
	return cmd
}
