package broker

import (
	"context"
	"path/filepath"

	"github.com/logd/logd/auth"
)

// LogDir is this node's data directory as Kafka's DescribeLogDirs reports
// it: the partitions it keeps a replica of, with their bytes on disk, and
// the size and free space of its file system (-1 when unknown).
type LogDir struct {
	Path                    string
	TotalBytes, UsableBytes int64
	Partitions              []LogDirPartition
}

// LogDirPartition is one partition's replica on this node.
type LogDirPartition struct {
	Topic     string
	Partition int32
	Size      int64 // bytes of its segments
}

// LogDir describes the data directory: describe on the cluster, as
// Kafka authorizes DescribeLogDirs.
func (b *Broker) LogDir(ctx context.Context, pr Principal) (LogDir, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Cluster()); err != nil {
		return LogDir{}, err
	}
	path, err := filepath.Abs(b.cfg.DataDir)
	if err != nil {
		path = b.cfg.DataDir
	}
	d := LogDir{Path: path, TotalBytes: -1, UsableBytes: -1}
	if total, free, err := statfs(b.cfg.DataDir); err == nil {
		d.TotalBytes, d.UsableBytes = int64(total), int64(free)
	}
	for _, cfg := range b.topics.List() {
		_, parts, err := b.topics.Partitions(cfg.Name)
		if err != nil {
			continue // deleted meanwhile
		}
		for _, p := range parts {
			if p == nil || p.Log == nil {
				continue
			}
			// A partition without a replica on this node has no log
			// here to describe (the same test retention makes).
			if _, here := b.plane.retentionLog(cfg, p); !here {
				continue
			}
			d.Partitions = append(d.Partitions, LogDirPartition{Topic: p.Topic, Partition: p.ID, Size: p.Log.Size()})
		}
	}
	return d, nil
}
