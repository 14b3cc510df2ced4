// Command partkeys prints one key per partition of a topic with -n
// partitions, for bench/partitions.sh ("produce to all"): line i
// is "KEY:i", where KEY is the first of k0, k1, k2, ... that routes to
// partition i, so that `logd produce --key-delimiter :` sends one record to
// every partition. It routes with routing.ForKey, the function the client
// and the server route with, so the keys cannot drift from the real
// partitioner.
//
//	go run ./bench/partkeys -n 1000 | logd produce T --key-delimiter : --acks all
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/logd/logd/routing"
)

func main() {
	n := flag.Int("n", 0, "partitions of the topic (> 0)")
	flag.Parse()
	if *n <= 0 || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: partkeys -n PARTITIONS (prints KEY:PARTITION, one line per partition)")
		os.Exit(2)
	}
	if err := write(os.Stdout, *n); err != nil {
		fmt.Fprintln(os.Stderr, "partkeys:", err)
		os.Exit(1)
	}
}

// keysForPartitions returns, for each of n partitions, the first key of
// k0, k1, k2, ... that routing.ForKey sends to it. The keys hold no ':',
// the delimiter partitions.sh gives logd produce.
func keysForPartitions(n int) []string {
	keys := make([]string, n)
	for i, left := 0, n; left > 0; i++ {
		k := fmt.Sprintf("k%d", i)
		if p := routing.ForKey([]byte(k), n); keys[p] == "" {
			keys[p] = k
			left--
		}
	}
	return keys
}

// write prints "KEY:PARTITION" for each partition of n, in partition order.
func write(w io.Writer, n int) error {
	b := bufio.NewWriter(w)
	for p, k := range keysForPartitions(n) {
		fmt.Fprintf(b, "%s:%d\n", k, p)
	}
	return b.Flush()
}
