package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/logd/logd/internal/node"
)

// kafkaFlags are serve's flags for the Kafka listener (docs/kafka.md).
type kafkaFlags struct {
	addr, advertised string
}

func (k *kafkaFlags) register(f *pflag.FlagSet) {
	f.StringVar(&k.addr, "kafka-addr", node.DefaultKafkaAddr, `Kafka protocol listen address ("" turns the listener off)`)
	f.StringVar(&k.advertised, "kafka-advertised-addr", "", "HOST:PORT Kafka clients are told to connect to (default: the --kafka-addr listener's)")
}

// check validates the addresses before anything is opened and puts them
// in cfg. The listener shares the API's TLS files (a client certificate
// from --tls-client-ca names the principal) and has a cap of its own of
// --max-connections. When the default address is taken (another Kafka, or
// another logd on this machine) the node runs without it and says so; an
// address given explicitly must be served.
func (k *kafkaFlags) check(f *pflag.FlagSet, cfg *node.Config) error {
	for _, a := range [][2]string{{"--kafka-addr", k.addr}, {"--kafka-advertised-addr", k.advertised}} {
		if a[1] == "" {
			continue
		}
		_, port, err := net.SplitHostPort(a[1])
		if err != nil {
			return fmt.Errorf("%s %s is not HOST:PORT (%v): give one such as %s", a[0], a[1], err, node.DefaultKafkaAddr)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("%s %s: port %q is not a port number (0 to 65535)", a[0], a[1], port)
		}
	}
	cfg.KafkaAddr, cfg.KafkaAdvertisedAddr = k.addr, k.advertised
	cfg.KafkaOptional = !f.Changed("kafka-addr")
	return nil
}
