package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"

	"github.com/logd/logd/broker"
)

// Topic administration (docs/http.md, "Topics"):
//
//	POST  /v1/topics          create: {"name", "partitions", "replicas", "configs"}
//	PATCH /v1/topics/{topic}  change settings live: {"configs": {...}}
//
// Settings go by their Kafka names, with Kafka's values as strings (a
// JSON number is taken too); in a PATCH, null puts a setting back to its
// default, as Kafka's IncrementalAlterConfigs DELETE does. Both go through
// the broker's CreateTopic and AlterTopic, as the gRPC Admin service and
// the Kafka API do: the same checks, the same authorization (create on the
// cluster or the topic; alter on the topic), and in a cluster the same
// passing on to the node that leads the metadata.

// createTopicJSON is a create's body.
type createTopicJSON struct {
	Name       string                     `json:"name"`
	Partitions *int32                     `json:"partitions"`
	Replicas   int32                      `json:"replicas"`
	Configs    map[string]json.RawMessage `json:"configs"`
}

// alterTopicJSON is a settings change's body.
type alterTopicJSON struct {
	Configs map[string]json.RawMessage `json:"configs"`
}

// errBadConfig is a config the request names or sets wrongly (400).
var errBadConfig = errors.New("invalid topic config")

func (h *Handler) createTopic(w http.ResponseWriter, r *http.Request) {
	var body createTopicJSON
	if !h.readJSONBody(w, r, &body, `{"name": "orders", "partitions": 3, "configs": {"cleanup.policy": "compact"}}`) {
		return
	}
	if body.Name == "" {
		writeError(w, http.StatusBadRequest, `name the topic: {"name": "orders", "partitions": 3}`)
		return
	}
	cfg := broker.DefaultConfig(body.Name)
	if body.Partitions != nil {
		cfg.Partitions = *body.Partitions
	}
	if cfg.Partitions < 1 || cfg.Partitions > broker.MaxPartitions {
		writeError(w, http.StatusBadRequest, "partitions must be between 1 and %d, got %d (leave it out for 1)", broker.MaxPartitions, cfg.Partitions)
		return
	}
	if body.Replicas < 0 {
		writeError(w, http.StatusBadRequest, "replicas must be positive, got %d (leave it out for the default: 1 on a single node, 3 in a cluster)", body.Replicas)
		return
	}
	// 0 asks the core for the default replica count.
	cfg.Replicas = body.Replicas
	ch, err := configChange(body.Configs, false)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	c, err := h.core.CreateTopic(r.Context(), h.principal(r), cfg.Apply(ch))
	if err != nil {
		writeCoreError(w, err)
		return
	}
	w.Header().Set("Location", "/v1/topics/"+url.PathEscape(c.Name))
	writeJSON(w, http.StatusCreated, h.topicAnswer(r, c))
}

func (h *Handler) alterTopic(w http.ResponseWriter, r *http.Request) {
	var body alterTopicJSON
	if !h.readJSONBody(w, r, &body, `{"configs": {"cleanup.policy": "compact,delete", "retention.ms": null}}`) {
		return
	}
	if len(body.Configs) == 0 {
		writeError(w, http.StatusBadRequest, `the body changes no setting: send {"configs": {"cleanup.policy": "compact"}} (null puts a setting back to its default)`)
		return
	}
	ch, err := configChange(body.Configs, true)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	c, err := h.core.AlterTopic(r.Context(), h.principal(r), r.PathValue("topic"), ch)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h.topicAnswer(r, c))
}

// topicAnswer is a created or changed topic as GET shows it, with the
// config the core answered: a node that passed the change on to the
// metadata leader may not have applied it to its own copy yet.
func (h *Handler) topicAnswer(r *http.Request, c broker.TopicConfig) topicJSON {
	t, err := h.core.Topic(r.Context(), h.principal(r), c.Name)
	if err != nil {
		t = broker.TopicInfo{}
	}
	t.Config = c
	return toTopicJSON(t)
}

// readJSONBody decodes a JSON object into v within the body limit,
// answering 415, 400 (with example, the form wanted) or 413 itself when it
// cannot. The body must be declared application/json, as a produce's: a
// page of another site can send the other types without asking first.
func (h *Handler) readJSONBody(w http.ResponseWriter, r *http.Request, v any, example string) bool {
	if msg := jsonContentType(r.Header.Get("Content-Type")); msg != "" {
		writeError(w, http.StatusUnsupportedMediaType, "%s", msg)
		return false
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		if isMaxBytes(err) {
			writeError(w, http.StatusRequestEntityTooLarge, "request body over %d bytes", h.cfg.MaxBodyBytes)
			return false
		}
		writeError(w, http.StatusBadRequest, "read the body: %v", err)
		return false
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "the body is not the JSON object this endpoint takes: %v; send e.g. %s (see docs/http.md)", err, example)
		return false
	}
	if d.More() {
		writeError(w, http.StatusBadRequest, "the body holds more than one JSON value; send one object, e.g. %s", example)
		return false
	}
	return true
}

// configChange turns settings by Kafka name into the core's change. A null
// value is the setting's default when reset is true (a change), and
// refused otherwise (a create takes every default anyway).
func configChange(configs map[string]json.RawMessage, reset bool) (broker.ConfigChange, error) {
	var ch broker.ConfigChange
	names := make([]string, 0, len(configs))
	for name := range configs {
		names = append(names, name)
	}
	slices.Sort(names) // the first bad one named is always the same
	for _, name := range names {
		s, ok := broker.TopicSettingByName(name)
		if !ok {
			return ch, fmt.Errorf("%w: unknown config %q: the topic configs are %s", errBadConfig, name, broker.TopicSettingNames)
		}
		v, isNull, err := configValue(configs[name])
		if err != nil {
			return ch, fmt.Errorf("%w: %s: %v", errBadConfig, name, err)
		}
		if isNull {
			if !reset {
				return ch, fmt.Errorf("%w: %s is null: give a value, or leave it out for the default", errBadConfig, name)
			}
			v = s.Default()
		}
		if err := s.Parse(&ch, v); err != nil {
			return ch, err // names the setting and what to give
		}
	}
	return ch, nil
}

// configValue is a setting's value as text: a JSON string's contents, or
// a JSON number as written. null is reported apart.
func configValue(raw json.RawMessage) (v string, isNull bool, err error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case string(raw) == "null":
		return "", true, nil
	case len(raw) > 0 && raw[0] == '"':
		err = json.Unmarshal(raw, &v)
		return v, false, err
	case len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')):
		return string(raw), false, nil
	}
	return "", false, fmt.Errorf("%s is not a value: give a string such as \"compact\" or \"86400000\", a number, or null", raw)
}
