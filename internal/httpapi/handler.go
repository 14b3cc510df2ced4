package httpapi

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/offsets"
)

// Core is what the HTTP front-end needs of the core: the methods of
// *broker.Broker it calls (broker/doc.go).
type Core interface {
	LocalNode() broker.Node
	// Nodes are the cluster's members with their advertised addresses, as
	// this node knows them (no call to another node).
	Nodes(ctx context.Context) ([]broker.Node, error)
	ClusterStatus(ctx context.Context, p broker.Principal, local bool) (broker.Status, error)
	// ClusterRecordCounts are each member's record counters (the
	// console's charts).
	ClusterRecordCounts(ctx context.Context, p broker.Principal) ([]broker.NodeRecordCounts, error)
	Topics(ctx context.Context, p broker.Principal) ([]broker.TopicInfo, error)
	Topic(ctx context.Context, p broker.Principal, name string) (broker.TopicInfo, error)
	// TopicLayout is for a partition count or list: no Raft round per
	// partition.
	TopicLayout(ctx context.Context, p broker.Principal, name string) (broker.TopicInfo, error)
	// CreateTopic and AlterTopic change the metadata: on a node that does
	// not lead it, the broker passes them on to the node that does.
	CreateTopic(ctx context.Context, p broker.Principal, cfg broker.TopicConfig) (broker.TopicConfig, error)
	AlterTopic(ctx context.Context, p broker.Principal, name string, ch broker.ConfigChange) (broker.TopicConfig, error)
	ProduceRecords(ctx context.Context, r broker.RecordsRequest) ([]broker.RecordsAppend, error)
	Fetch(ctx context.Context, r broker.FetchRequest) (broker.FetchResult, error)
	ListOffset(ctx context.Context, p broker.Principal, topic string, partition int32, spec int64) (offset, timestampMs int64, err error)
	// ListOffsetsIsolated resolves latest to the last stable offset for a
	// read_committed reader.
	ListOffsetsIsolated(ctx context.Context, p broker.Principal, topic string, ids []int32, spec int64, committed bool) ([]broker.PartitionOffset, error)
	CommitOffsets(ctx context.Context, p broker.Principal, group, member string, generation int32, cs []offsets.Committed) error
	FetchOffsets(ctx context.Context, p broker.Principal, group string, topics []string) ([]offsets.Committed, error)
	Lag(ctx context.Context, group string, cs []offsets.Committed) []broker.GroupOffset
	// The consumer groups, each call authorized by the core.
	DescribeGroup(ctx context.Context, p broker.Principal, group string) (groups.GroupDescription, error)
	ListMemberGroups(ctx context.Context, p broker.Principal) ([]broker.GroupListing, error)
}

// A node serves the HTTP API over its broker's AnyNode: in a cluster any
// node answers any request, passing on to the nodes that lead what it
// needs (broker.Forwarder). A broker alone serves it too.
var (
	_ Core = broker.AnyNode{}
	_ Core = (*broker.Broker)(nil)
)

// Config configures the handler. The zero value is usable.
type Config struct {
	// MaxBodyBytes bounds a request body (default 4 MiB); a larger one is
	// refused with 413 before anything is written.
	MaxBodyBytes int64
	// SendTimeout is how long a live tail's write may wait for a client
	// that reads nothing before the stream is ended (default 30 s).
	SendTimeout time.Duration
	// Heartbeat is the interval of the live tail's comment lines
	// (default 15 s).
	Heartbeat time.Duration
	// Principal names who makes a request (nil: anonymous). The core
	// decides what it may do.
	Principal func(*http.Request) broker.Principal
}

const (
	defaultMaxBodyBytes = 4 << 20
	defaultSendTimeout  = 30 * time.Second
	defaultHeartbeat    = 15 * time.Second
)

// Handler serves the JSON API, the live tail and the console.
type Handler struct {
	core Core
	cfg  Config
	mux  *http.ServeMux
	// streams counts open live tails (for tests and shutdown checks).
	streams atomic.Int64
	// done is closed by Close: the live tails end.
	done      chan struct{}
	closeOnce sync.Once
}

// New returns the handler over core.
func New(core Core, cfg Config) *Handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = defaultMaxBodyBytes
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = defaultSendTimeout
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = defaultHeartbeat
	}
	h := &Handler{core: core, cfg: cfg, mux: http.NewServeMux(), done: make(chan struct{})}
	h.routes()
	return h
}

func (h *Handler) routes() {
	m := h.mux
	m.HandleFunc("GET /v1/cluster", h.cluster)
	m.HandleFunc("GET /v1/cluster/record-counts", h.recordCounts)
	m.HandleFunc("GET /v1/topics", h.listTopics)
	m.HandleFunc("POST /v1/topics", h.createTopic)
	m.HandleFunc("GET /v1/topics/{topic}", h.describeTopic)
	m.HandleFunc("PATCH /v1/topics/{topic}", h.alterTopic)
	m.HandleFunc("POST /v1/topics/{topic}/records", h.produce)
	m.HandleFunc("GET /v1/topics/{topic}/records", h.readRecords)
	m.HandleFunc("GET /v1/topics/{topic}/events", h.events)
	m.HandleFunc("GET /v1/groups", h.listGroups)
	m.HandleFunc("GET /v1/groups/{group}", h.describeGroup)
	h.kvRoutes(m) // kv.go
	h.shareRoutes(m)
	m.HandleFunc("/v1/", h.noEndpoint)
	m.Handle("/", h.consoleHandler())
}

// ServeHTTP serves the request. Every answer the mux could give itself
// (404, 405) is taken by noEndpoint or the console, with a JSON body.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// noEndpoint answers a /v1/ request no route takes: 405 with Allow when
// the path exists for other methods, else 404.
func (h *Handler) noEndpoint(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := h.mux.Handler(probe); pattern != "/v1/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method %s not allowed on %s: use %s", r.Method, r.URL.Path, strings.Join(allow, " or "))
		return
	}
	writeError(w, http.StatusNotFound, "no such endpoint %s %s: see docs/http.md for the /v1/ API", r.Method, r.URL.Path)
}

// Close ends the live tails being served (each with an error event that
// says to reconnect), as the node stops: an HTTP server's shutdown waits
// for its requests, and a live tail never ends by itself. Other requests
// are served as before.
func (h *Handler) Close() {
	h.closeOnce.Do(func() { close(h.done) })
}

// OpenStreams is the number of live tails being served.
func (h *Handler) OpenStreams() int64 { return h.streams.Load() }

func (h *Handler) principal(r *http.Request) broker.Principal {
	if h.cfg.Principal == nil {
		return ""
	}
	return h.cfg.Principal(r)
}
