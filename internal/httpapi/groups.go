package httpapi

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/logd/logd/groups"
)

type groupListingJSON struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
}

// listGroups answers the groups the coordinator holds and those that only
// have committed offsets (reported Empty).
func (h *Handler) listGroups(w http.ResponseWriter, r *http.Request) {
	list, err := h.core.ListMemberGroups(r.Context(), h.principal(r))
	if err != nil {
		writeCoreError(w, err)
		return
	}
	byName := map[string]groupListingJSON{}
	for _, l := range list {
		byName[l.Group] = groupListingJSON{Group: l.Group, State: l.State.String(), ProtocolType: l.ProtocolType}
	}
	out := struct {
		Groups []groupListingJSON `json:"groups"`
	}{Groups: make([]groupListingJSON, 0, len(byName))}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out.Groups = append(out.Groups, byName[name])
	}
	writeJSON(w, http.StatusOK, out)
}

type memberJSON struct {
	MemberID       string           `json:"member_id"`
	ClientID       string           `json:"client_id"`
	ClientHost     string           `json:"client_host"`
	SessionTimeout string           `json:"session_timeout"`
	Assignment     []assignmentJSON `json:"assignment"`
}

type assignmentJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

type groupOffsetJSON struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	Committed     int64  `json:"committed"`
	Metadata      string `json:"metadata,omitempty"`
	CommitTime    string `json:"commit_time,omitempty"`
	LogStart      int64  `json:"log_start"`
	HighWatermark int64  `json:"high_watermark"`
	Lag           int64  `json:"lag"`
	// Lost counts records retention removed before the group read them.
	Lost int64 `json:"lost,omitempty"`
	// Known is false when the partition's bounds could not be had now
	// (then lag is 0).
	Known bool `json:"known"`
}

type groupJSON struct {
	Group        string            `json:"group"`
	State        string            `json:"state"`
	ProtocolType string            `json:"protocol_type"`
	Protocol     string            `json:"protocol"`
	Generation   int32             `json:"generation"`
	Leader       string            `json:"leader"`
	Members      []memberJSON      `json:"members"`
	Offsets      []groupOffsetJSON `json:"offsets"`
	Lag          int64             `json:"lag"`
}

// describeGroup answers a group's members and assignment (from the
// coordinator) and its committed offsets with their lag. A group with
// committed offsets and no members is Empty; one with neither is 404.
func (h *Handler) describeGroup(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("group")
	p := h.principal(r)
	d, derr := h.core.DescribeGroup(r.Context(), p, name)
	if derr != nil && !errors.Is(derr, groups.ErrGroupNotFound) {
		writeCoreError(w, derr)
		return
	}
	committed, err := h.core.FetchOffsets(r.Context(), p, name, nil)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	if derr != nil && len(committed) == 0 {
		writeError(w, http.StatusNotFound, "group %q has no members and no committed offsets: see GET /v1/groups", name)
		return
	}
	out := groupJSON{Group: name, State: d.State.String(), ProtocolType: d.ProtocolType, Protocol: d.Protocol,
		Generation: d.Generation, Leader: d.Leader, Members: []memberJSON{}, Offsets: []groupOffsetJSON{}}
	if derr != nil {
		out.State = groups.Empty.String()
	}
	for _, m := range d.Members {
		mj := memberJSON{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			SessionTimeout: m.SessionTimeout.String(), Assignment: []assignmentJSON{}}
		for _, tp := range m.Partitions {
			mj.Assignment = append(mj.Assignment, assignmentJSON{Topic: tp.Topic, Partition: tp.Partition})
		}
		out.Members = append(out.Members, mj)
	}
	for _, o := range h.core.Lag(r.Context(), name, committed) {
		oj := groupOffsetJSON{Topic: o.Topic, Partition: o.Partition, Committed: o.Offset, Metadata: o.Metadata,
			LogStart: o.LogStart, HighWatermark: o.HighWatermark, Lag: o.Lag, Known: o.Known}
		if !o.CommitTime.IsZero() {
			oj.CommitTime = o.CommitTime.UTC().Format(time.RFC3339Nano)
		}
		if o.Trimmed {
			oj.Lost = o.LogStart - o.Offset
		}
		out.Lag += o.Lag
		out.Offsets = append(out.Offsets, oj)
	}
	writeJSON(w, http.StatusOK, out)
}
