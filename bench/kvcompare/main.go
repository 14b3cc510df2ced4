// Command kvcompare measures a key-value store's gets and puts, for
// bench/kv.sh: logd's key-value view (client.KV on a compacted topic) or
// NATS JetStream KV (nats.go), on the same workload:
//
//	kvcompare logd -addr HOST:PORT [flags]
//	kvcompare nats -url nats://HOST:PORT [flags]
//
// It writes -keys keys of -size bytes once, then runs -puts puts of random
// keys from -clients goroutines (each put waits for its answer), then -gets
// gets of random keys from one goroutine, first consistent then local:
// for logd a linearizable get and a stale one (client.Stale), for
// JetStream a get through the stream leader's API (a bucket without
// direct get) and a direct get (a bucket with it). It prints one JSON line:
// put_per_sec, and get/local_get p50 and p99 in microseconds.
//
// It is its own module (bench/kvcompare/go.mod) so that logd's module
// does not depend on nats.go.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logd/logd/client"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// store is one system under test.
type store interface {
	put(ctx context.Context, key string, value []byte) error
	// fill writes key so that every get finds it.
	fill(ctx context.Context, key string, value []byte) error
	get(ctx context.Context, key string, local bool) error
	close()
}

type result struct {
	System      string  `json:"system"`
	Keys        int     `json:"keys"`
	Size        int     `json:"size"`
	Clients     int     `json:"clients"`
	PutPerSec   float64 `json:"put_per_sec"`
	GetP50      float64 `json:"get_p50_us"`
	GetP99      float64 `json:"get_p99_us"`
	LocalGetP50 float64 `json:"local_get_p50_us"`
	LocalGetP99 float64 `json:"local_get_p99_us"`
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "logd" && os.Args[1] != "nats") {
		fmt.Fprintln(os.Stderr, "usage: kvcompare logd|nats [-addr HOST:PORT] [-url nats://HOST:PORT] [-keys N] [-size B] [-puts N] [-gets N] [-clients N]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:7070", "logd's gRPC address")
	url := fs.String("url", "nats://127.0.0.1:4222", "the NATS server")
	name := fs.String("name", "kvbench", "the topic or bucket (created)")
	keys := fs.Int("keys", 1000, "keys")
	size := fs.Int("size", 100, "value size in bytes")
	puts := fs.Int("puts", 20000, "puts to time")
	gets := fs.Int("gets", 20000, "gets to time, of each kind")
	clients := fs.Int("clients", 4, "concurrent putters")
	fs.Parse(os.Args[2:])
	if *keys <= 0 || *size <= 0 || *puts <= 0 || *gets <= 0 || *clients <= 0 {
		fmt.Fprintln(os.Stderr, "kvcompare: -keys, -size, -puts, -gets and -clients must be positive")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var s store
	var err error
	if os.Args[1] == "logd" {
		s, err = openLogd(ctx, *addr, *name)
	} else {
		s, err = openNATS(ctx, *url, *name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kvcompare:", err)
		os.Exit(1)
	}
	defer s.close()
	res, err := measure(ctx, s, *keys, *size, *puts, *gets, *clients)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kvcompare:", err)
		os.Exit(1)
	}
	res.System, res.Keys, res.Size, res.Clients = os.Args[1], *keys, *size, *clients
	json.NewEncoder(os.Stdout).Encode(res)
}

func key(i int) string { return fmt.Sprintf("key-%06d", i) }

// measure fills the keys, then times the puts and the gets.
func measure(ctx context.Context, s store, keys, size, puts, gets, clients int) (result, error) {
	var res result
	value := make([]byte, size)
	for i := range keys {
		if err := s.fill(ctx, key(i), value); err != nil {
			return res, fmt.Errorf("fill: %w", err)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for next.Add(1) <= int64(puts) {
				if err := s.put(ctx, key(rng.IntN(keys)), value); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return res, fmt.Errorf("put: %w", err)
	}
	res.PutPerSec = float64(puts) / time.Since(start).Seconds()
	var err error
	if res.GetP50, res.GetP99, err = getLatency(ctx, s, keys, gets, false); err != nil {
		return res, err
	}
	res.LocalGetP50, res.LocalGetP99, err = getLatency(ctx, s, keys, gets, true)
	return res, err
}

// getLatency times n gets of random keys, one at a time, and returns
// their p50 and p99 in microseconds.
func getLatency(ctx context.Context, s store, keys, n int, local bool) (p50, p99 float64, err error) {
	rng := rand.New(rand.NewPCG(7, 7))
	lat := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if err := s.get(ctx, key(rng.IntN(keys)), local); err != nil {
			return 0, 0, fmt.Errorf("get (local %v): %w", local, err)
		}
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	return us(lat[len(lat)/2]), us(lat[len(lat)*99/100]), nil
}

type logdStore struct {
	c  *client.Client
	kv *client.KV
}

func openLogd(ctx context.Context, addr, topic string) (*logdStore, error) {
	c, err := client.Dial(addr)
	if err != nil {
		return nil, err
	}
	_, err = c.Admin().CreateTopic(ctx, topic, client.TopicOptions{Partitions: 1, Config: client.TopicConfig{CleanupPolicy: "compact"}})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("create topic %s: %w", topic, err)
	}
	return &logdStore{c: c, kv: c.KV(topic)}, nil
}

func (s *logdStore) put(ctx context.Context, key string, value []byte) error {
	_, err := s.kv.Put(ctx, []byte(key), value)
	return err
}

func (s *logdStore) fill(ctx context.Context, key string, value []byte) error {
	return s.put(ctx, key, value)
}

func (s *logdStore) get(ctx context.Context, key string, local bool) error {
	var opts []client.KVOption
	if local {
		opts = append(opts, client.Stale())
	}
	_, ok, err := s.kv.Get(ctx, []byte(key), opts...)
	if err == nil && !ok {
		err = fmt.Errorf("key %s not found", key)
	}
	return err
}

func (s *logdStore) close() { s.c.Close() }

type natsStore struct {
	nc             *nats.Conn
	leader, direct jetstream.KeyValue
}

// openNATS creates two buckets of one history, file storage: one without
// direct get (gets go to the stream's leader) and one with it; puts go to
// both, half each, so that each holds every key once filled.
func openNATS(ctx context.Context, url, bucket string) (*natsStore, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	s := &natsStore{nc: nc}
	for _, b := range []struct {
		kv     *jetstream.KeyValue
		name   string
		direct bool
	}{{&s.leader, bucket + "-leader", false}, {&s.direct, bucket + "-direct", true}} {
		*b.kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b.name, History: 1, Storage: jetstream.FileStorage})
		if err == nil && !b.direct {
			err = disableDirect(ctx, js, "KV_"+b.name)
		}
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("bucket %s: %w", b.name, err)
		}
		// Opened again: a handle reads the stream's direct-get setting
		// when it is made.
		if *b.kv, err = js.KeyValue(ctx, b.name); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return s, nil
}

// disableDirect turns direct get off on a bucket's stream, so that its
// gets are answered by the stream's leader.
func disableDirect(ctx context.Context, js jetstream.JetStream, stream string) error {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	cfg := st.CachedInfo().Config
	cfg.AllowDirect = false
	_, err = js.UpdateStream(ctx, cfg)
	return err
}

var natsPuts atomic.Int64

func (s *natsStore) put(ctx context.Context, key string, value []byte) error {
	kv := s.leader
	if natsPuts.Add(1)%2 == 0 {
		kv = s.direct
	}
	_, err := kv.Put(ctx, key, value)
	return err
}

func (s *natsStore) fill(ctx context.Context, key string, value []byte) error {
	for _, kv := range []jetstream.KeyValue{s.leader, s.direct} {
		if _, err := kv.Put(ctx, key, value); err != nil {
			return err
		}
	}
	return nil
}

func (s *natsStore) get(ctx context.Context, key string, local bool) error {
	kv := s.leader
	if local {
		kv = s.direct
	}
	_, err := kv.Get(ctx, key)
	return err
}

func (s *natsStore) close() { s.nc.Close() }
