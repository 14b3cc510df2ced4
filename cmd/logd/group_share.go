package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/logd/logd/client"
)

// describeShareGroup prints group as a share group when the coordinator
// knows it as one, and reports whether it did. A refusal is returned (the
// consumer-group describe would be refused alike); any other failure (a
// node that serves no share groups, or not this group) leaves the group
// to the consumer-group describe.
func describeShareGroup(ctx context.Context, admin *client.Admin, group string, w io.Writer, asJSON bool) (bool, error) {
	d, err := admin.DescribeShareGroup(ctx, group)
	switch {
	case errors.Is(err, client.ErrPermissionDenied):
		return false, err
	case err != nil || d.State == "Dead":
		return false, nil
	case asJSON:
		return true, writeShareGroupJSON(w, d)
	}
	return true, writeShareGroupTable(w, d)
}

func writeShareGroupTable(w io.Writer, d client.ShareGroupDescription) error {
	fmt.Fprintf(w, "share group %s: %s, epoch %d, %d members\n", d.Group, d.State, d.Epoch, len(d.Members))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(d.Members) > 0 {
		fmt.Fprintln(tw, "\nMEMBER\tCLIENT\tHOST\tEPOCH\tTOPICS")
		for _, m := range d.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", m.MemberID, orDash(m.ClientID), orDash(m.ClientHost), m.MemberEpoch, orDash(strings.Join(m.Topics, ",")))
		}
	}
	if len(d.Partitions) > 0 {
		fmt.Fprintln(tw, "\nTOPIC\tPARTITION\tSTART\tEND\tIN-FLIGHT\tAVAILABLE\tACQUIRED\tBACKLOG\tOLDEST-UNACKED")
		for _, p := range d.Partitions {
			age := "-"
			if p.OldestAge > 0 {
				age = p.OldestAge.Round(time.Second).String()
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Topic, p.Partition, p.Start, p.End, p.InFlight, p.Available, p.Acquired, p.Backlog, age)
		}
	}
	return tw.Flush()
}

type shareGroupJSON struct {
	Group      string               `json:"group"`
	Type       string               `json:"type"` // "share"
	State      string               `json:"state"`
	Epoch      int32                `json:"epoch"`
	Members    []shareMemberJSON    `json:"members"`
	Partitions []sharePartStateJSON `json:"partitions"`
}

type shareMemberJSON struct {
	MemberID    string   `json:"member_id"`
	ClientID    string   `json:"client_id"`
	ClientHost  string   `json:"client_host"`
	MemberEpoch int32    `json:"member_epoch"`
	Topics      []string `json:"topics"`
}

type sharePartStateJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     int64  `json:"start_offset"`
	End       int64  `json:"end_offset"`
	InFlight  int32  `json:"in_flight"`
	Available int32  `json:"available"`
	Acquired  int32  `json:"acquired"`
	Backlog   int64  `json:"backlog"`
	// OldestUnackedMs is how long ago the oldest record not acknowledged
	// was appended, in milliseconds (0: none).
	OldestUnackedMs int64 `json:"oldest_unacked_ms"`
}

func writeShareGroupJSON(w io.Writer, d client.ShareGroupDescription) error {
	j := shareGroupJSON{Group: d.Group, Type: "share", State: d.State, Epoch: d.Epoch,
		Members: []shareMemberJSON{}, Partitions: []sharePartStateJSON{}}
	for _, m := range d.Members {
		j.Members = append(j.Members, shareMemberJSON{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			MemberEpoch: m.MemberEpoch, Topics: m.Topics})
	}
	for _, p := range d.Partitions {
		j.Partitions = append(j.Partitions, sharePartStateJSON{Topic: p.Topic, Partition: p.Partition, Start: p.Start, End: p.End,
			InFlight: p.InFlight, Available: p.Available, Acquired: p.Acquired, Backlog: p.Backlog, OldestUnackedMs: p.OldestAge.Milliseconds()})
	}
	return json.NewEncoder(w).Encode(j)
}
