package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// maxRedirects bounds how many "not leader" answers one call follows.
const maxRedirects = 3

// Client is a connection to a logd cluster through one or more nodes'
// addresses (the bootstrap, or seed, nodes). It is safe for concurrent use. Producers and Consumers made from it share its
// connections; close them before the Client.
type Client struct {
	addr  string   // as dialled
	seeds []string // bootstrap addresses
	seed  atomic.Uint32
	opts  options

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn // by API address
	closed bool

	// answered is set once a node answered a call (even with an error):
	// from then on an unreachable node is a node restarting, worth
	// retrying, rather than no server at all.
	answered atomic.Bool

	topics topicCache
	kvw    kvWriters // KV puts' idempotent writers
}

// Option configures Dial.
type Option func(*options)

type options struct {
	tls          *tls.Config
	creds        *basicCreds // WithCredentials
	dialOptions  []grpc.DialOption
	callTimeout  time.Duration
	retryTimeout time.Duration
}

// DefaultRetryTimeout is how long admin and metadata calls retry an
// unavailable cluster unless WithRetryTimeout says otherwise.
const DefaultRetryTimeout = 30 * time.Second

// HTTP/2 flow-control windows and the largest message accepted.
const (
	streamWindow = 8 << 20
	connWindow   = 32 << 20
	maxRecvMsg   = 64 << 20
)

// WithDialOptions adds gRPC dial options (TLS credentials, interceptors, a
// custom dialer). Without transport credentials the connection is plaintext.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}

// WithTLS connects over TLS with cfg (build it from files with
// tlsconfig.NewClient: a CA bundle, and a client certificate for a server
// that requires one). Without it the connection is plaintext, which a node
// serving TLS refuses.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.tls = cfg }
}

// WithCallTimeout bounds each admin and metadata call that has no deadline of
// its own (default 10s). Fetch long-polls and produce streams are not bound by
// it.
func WithCallTimeout(d time.Duration) Option {
	return func(o *options) { o.callTimeout = d }
}

// WithRetryTimeout bounds how long an admin or metadata call retries a
// cluster that cannot answer right now (ErrUnavailable: an election, a node
// restarting or setting up a new topic), with backoff, before returning the
// last error (default DefaultRetryTimeout; 0: no retries). A call's context
// deadline, when earlier, ends the retries too. When no node has ever
// answered this Client, an unreachable cluster (ErrUnreachable) fails after
// StartupGrace: nothing is running there.
func WithRetryTimeout(d time.Duration) Option {
	return func(o *options) { o.retryTimeout = d }
}

// Dial returns a Client of the nodes at addr: "host:port", or several
// separated by commas. Requests go to the first that answers (then to the
// leaders they name). Dial does not wait for a connection: the first call
// reports unreachable nodes.
func Dial(addr string, opts ...Option) (*Client, error) {
	o := options{callTimeout: 10 * time.Second, retryTimeout: DefaultRetryTimeout}
	for _, f := range opts {
		f(&o)
	}
	c := &Client{addr: addr, opts: o, conns: make(map[string]*grpc.ClientConn)}
	for _, a := range strings.Split(addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.seeds = append(c.seeds, a)
		}
	}
	if len(c.seeds) == 0 {
		return nil, fmt.Errorf("client: no address to dial in %q", addr)
	}
	if o.creds != nil && o.tls == nil {
		return nil, errCredentialsWithoutTLS
	}
	c.topics.c = c
	for _, a := range c.seeds {
		if _, err := c.conn(a); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// bootstrap is the seed address requests start from.
func (c *Client) bootstrap() string {
	return c.seeds[int(c.seed.Load())%len(c.seeds)]
}

// Addr is the address (list) the Client was dialled with.
func (c *Client) Addr() string { return c.addr }

// Close closes every connection. Close Producers and Consumers first.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var first error
	for a, cc := range c.conns {
		if err := cc.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.conns, a)
	}
	return first
}

// conn returns the connection to addr, creating it.
func (c *Client) conn(addr string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if cc, ok := c.conns[addr]; ok {
		return cc, nil
	}
	creds := insecure.NewCredentials()
	if c.opts.tls != nil {
		creds = credentials.NewTLS(refuseCertificateRequest(c.opts.tls))
	}
	dopts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		// Batches and fetches are up to several MiB: windows that large
		// keep one stream from stalling on HTTP/2 flow control.
		grpc.WithInitialWindowSize(streamWindow),
		grpc.WithInitialConnWindowSize(connWindow),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvMsg)),
	}, c.opts.dialOptions...)
	if c.opts.creds != nil {
		dopts = append(dopts, grpc.WithPerRPCCredentials(c.opts.creds))
	}
	cc, err := grpc.NewClient(addr, dopts...)
	if err != nil {
		return nil, fmt.Errorf("client: connect to %s: %w", addr, err)
	}
	c.conns[addr] = cc
	return cc, nil
}

// call runs fn against addr (a bootstrap address when empty), following
// "not leader" answers to the leader they name. From the bootstrap, a node
// that cannot answer (UNAVAILABLE naming no leader) makes it try the next
// seed. It returns the address that answered last; a status error comes
// back as an *apiError (errors.Is matches the sentinels).
func (c *Client) call(ctx context.Context, addr string, fn func(ctx context.Context, cc *grpc.ClientConn) error) (string, error) {
	addr, err := c.callOnce(ctx, addr, fn)
	st, ok := status.FromError(err)
	if err == nil || (ok && !unreachable(st)) {
		c.answered.Store(true)
	}
	if ok && st.Code() == codes.Unavailable && strings.Contains(st.Message(), errNoClientCertificate.Error()) {
		return addr, fmt.Errorf("%w: %w", ErrClientCertificateRequired, wrapStatus(err))
	}
	if ok && c.opts.tls == nil && unreachable(st) && strings.Contains(st.Message(), "server preface") {
		// A node that closes a new connection before speaking: another
		// listener of a node (HTTP, Kafka), or most often one that serves
		// TLS, reached in plaintext.
		if proto := probeProtocol(ctx, addr); proto != "" {
			return addr, &WrongProtocolError{Addr: addr, Protocol: proto}
		}
		return addr, fmt.Errorf("%w (%s)", wrapStatus(err), HintPlaintextToTLS)
	}
	return addr, wrapStatus(err)
}

// errNoClientCertificate ends the TLS handshake of a Client without a
// certificate with a node that asks for one.
var errNoClientCertificate = errors.New("the node asks for a client certificate and this client has none")

// refuseCertificateRequest returns cfg, or, when cfg has no client
// certificate, a copy that ends the handshake with errNoClientCertificate
// when the node asks for one. A logd node asks only when it requires one
// (--tls-client-ca), and under TLS 1.3 it would otherwise refuse the
// connection after the client's side of the handshake, which the client
// sees as a broken pipe or a closed connection, indistinguishable from a
// node restarting.
func refuseCertificateRequest(cfg *tls.Config) *tls.Config {
	if len(cfg.Certificates) > 0 || cfg.GetClientCertificate != nil {
		return cfg
	}
	cfg = cfg.Clone()
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return nil, errNoClientCertificate
	}
	return cfg
}

// HintPlaintextToTLS is added to the error of a plaintext connection the node
// closed before answering: it probably serves TLS.
const HintPlaintextToTLS = "the node closed the connection before answering: if it serves TLS, connect with TLS (client.WithTLS; the CLI's --tls-ca or LOGD_TLS_CA)"

func (c *Client) callOnce(ctx context.Context, addr string, fn func(ctx context.Context, cc *grpc.ClientConn) error) (string, error) {
	seedsLeft := 0
	if addr == "" {
		addr, seedsLeft = c.bootstrap(), len(c.seeds)-1
	}
	for hop := 0; ; {
		cc, err := c.conn(addr)
		if err != nil {
			return addr, err
		}
		err = fn(ctx, cc)
		leader := leaderOf(err)
		switch {
		case err == nil:
			return addr, nil
		case leader == "" && seedsLeft > 0 && status.Code(err) == codes.Unavailable && ctx.Err() == nil:
			seedsLeft--
			c.seed.Add(1)
			addr = c.bootstrap()
		case leader == "" || leader == addr || hop >= maxRedirects:
			return addr, err
		default:
			hop++
			addr = leader
		}
	}
}

// Backoff between retries of an unavailable cluster.
const (
	firstAdminBackoff = 50 * time.Millisecond
	maxAdminBackoff   = time.Second
)

// unary is call for admin and metadata RPCs: from the bootstrap address,
// each attempt bounded by the call timeout when ctx has no deadline, and
// retried while the cluster is unavailable, up to the retry timeout. fn
// must be safe to repeat.
func (c *Client) unary(ctx context.Context, fn func(ctx context.Context, cc *grpc.ClientConn) error) error {
	start := time.Now()
	backoff := firstAdminBackoff
	var last error // the last attempt's retriable answer
	for {
		err := c.unaryOnce(ctx, fn)
		waited := time.Since(start)
		if last != nil && endedByContext(err) {
			// A retry ran out of time (ctx's deadline, or the attempt's:
			// the server may see it pass first): the answer that made the
			// call retry says why it failed, the deadline only when it
			// gave up.
			return fmt.Errorf("still failing after retrying for %s: %w (then: %w)", waited.Round(10*time.Millisecond), last, err)
		}
		if err == nil || !c.retriable(ctx, err, waited) || ctx.Err() != nil {
			return err
		}
		last = err
		// The last wait is cut short so the last attempt comes at the
		// timeout, not a backoff before it.
		wait := min(backoff, c.opts.retryTimeout-waited)
		if wait < firstAdminBackoff/2 || pastDeadline(ctx, wait) {
			if waited < firstAdminBackoff {
				return err // retries are off, or the deadline allows none
			}
			return fmt.Errorf("still failing after retrying for %s: %w", waited.Round(100*time.Millisecond), err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
		backoff = min(2*backoff, maxAdminBackoff)
	}
}

func (c *Client) unaryOnce(ctx context.Context, fn func(ctx context.Context, cc *grpc.ClientConn) error) error {
	if _, ok := ctx.Deadline(); !ok && c.opts.callTimeout > 0 {
		d := c.opts.callTimeout
		if extra, ok := ctx.Value(serverWaitKey{}).(time.Duration); ok {
			d += extra
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	_, err := c.call(ctx, "", fn)
	return err
}

// serverWaitKey marks a call whose server waits, on purpose, up to the
// time.Duration it holds before answering (withServerWait).
type serverWaitKey struct{}

// withServerWait gives each attempt of a call on ctx d more than the call
// timeout, for a server that waits up to d before it answers.
func withServerWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, serverWaitKey{}, d)
}

// StartupGrace is how long a Client that no node ever answered retries an
// unreachable cluster before it fails with ErrUnreachable: long enough for
// a node started just before (`logd serve &` and the next command of a
// script) to listen, short enough that a wrong address fails soon.
const StartupGrace = 3 * time.Second

// retriable reports an error worth another attempt of an admin call that
// has retried for waited: the cluster answered that it cannot answer now,
// or a node that answered this Client before is unreachable (restarting),
// or none has answered yet and the call is within StartupGrace.
func (c *Client) retriable(ctx context.Context, err error, waited time.Duration) bool {
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrClientCertificateRequired) {
		return false
	}
	return !errors.Is(err, ErrUnreachable) || c.answered.Load() || waited < StartupGrace || ctx.Value(retryUnreachableKey{}) != nil
}

type retryUnreachableKey struct{}

// RetryUnreachable returns a context whose admin and metadata calls retry
// an unreachable cluster for the whole retry timeout (WithRetryTimeout, or
// the context's deadline when earlier) even when no node has answered the
// Client yet: for a caller that knows the cluster exists and may be
// restarting, where StartupGrace would take a silence for a wrong address.
func RetryUnreachable(ctx context.Context) context.Context {
	return context.WithValue(ctx, retryUnreachableKey{}, true)
}

// endedByContext reports whether err is a call's end by its context (its
// deadline, or a cancel), as gRPC or the context reports it.
func endedByContext(err error) bool {
	switch status.Code(err) {
	case codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// pastDeadline reports whether ctx's deadline comes within d.
func pastDeadline(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && time.Until(deadline) < d
}

// PartitionCountMaxAge is how long a Client routes records by a topic's
// partition count before it asks the server again (Kafka's
// metadata.max.age.ms): a producer starts using partitions added to a
// topic (Admin.AddPartitions) within it, or at once for a record that
// names a partition past the count it knew.
const PartitionCountMaxAge = time.Minute

// topicCache caches topics' partition counts for routing.
type topicCache struct {
	c  *Client
	mu sync.Mutex
	n  map[string]cachedCount
}

type cachedCount struct {
	n  int32
	at time.Time
}

// partitions returns topic's partition count, asking the server at most
// once every PartitionCountMaxAge.
func (t *topicCache) partitions(ctx context.Context, topic string) (int32, error) {
	t.mu.Lock()
	cc, ok := t.n[topic]
	t.mu.Unlock()
	if ok && time.Since(cc.at) < PartitionCountMaxAge {
		return cc.n, nil
	}
	var resp *logdv1.DescribeTopicResponse
	err := t.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = logdv1.NewAdminClient(cc).DescribeTopic(ctx, &logdv1.DescribeTopicRequest{Name: topic, ConfigOnly: true})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("describe topic %q: %w", topic, err)
	}
	n := resp.GetTopic().GetPartitions()
	if n <= 0 {
		return 0, fmt.Errorf("describe topic %q: server reported %d partitions", topic, n)
	}
	t.mu.Lock()
	if t.n == nil {
		t.n = make(map[string]cachedCount)
	}
	t.n[topic] = cachedCount{n: n, at: time.Now()}
	t.mu.Unlock()
	return n, nil
}

// forget drops topic from the cache (after NOT_FOUND, or an alter).
func (t *topicCache) forget(topic string) {
	t.mu.Lock()
	delete(t.n, topic)
	t.mu.Unlock()
}
