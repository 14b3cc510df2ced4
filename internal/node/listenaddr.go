package node

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// errInvalidAddr is wrapped by an address flag that is not HOST:PORT.
var errInvalidAddr = errors.New("server: invalid address")

// checkListenAddr checks addr, the value of flag, before anything is
// opened, so a typo is reported as one rather than as a failed listen.
func checkListenAddr(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %s %s is not HOST:PORT (%v): give one such as 127.0.0.1:7070", errInvalidAddr, flag, addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		if _, lerr := net.LookupPort("tcp", port); err != nil && lerr == nil {
			return nil // a service name, such as "http"
		}
		return fmt.Errorf("%w: %s %s: port %q is not a port number (0 to 65535; 0 picks a free one)", errInvalidAddr, flag, addr, port)
	}
	return nil
}

// checkListenAddrs checks every address the node will listen on.
func checkListenAddrs(cfg Config) error {
	addrs := [][2]string{{"--addr", cfg.Addr}}
	if cfg.HTTPAddr != "" {
		addrs = append(addrs, [2]string{"--http-addr", cfg.HTTPAddr})
	}
	if cfg.Cluster != nil && cfg.Cluster.RaftAddr != "" && cfg.Cluster.RaftListener == nil {
		addrs = append(addrs, [2]string{"--raft-addr", cfg.Cluster.RaftAddr})
	}
	for _, a := range addrs {
		if err := checkListenAddr(a[0], a[1]); err != nil {
			return err
		}
	}
	return nil
}

// listenError explains a failed listen on addr, the value of flag: only
// an address in use points at another process.
func listenError(flag, addr string, err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("listen on %s %s: the address is in use (is another logd running?): %w", flag, addr, err)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Errorf("listen on %s %s: no interface of this machine has that address: %w", flag, addr, err)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("listen on %s %s: not allowed (ports below 1024 need privileges): %w", flag, addr, err)
	}
	return fmt.Errorf("listen on %s %s: %w", flag, addr, err)
}
