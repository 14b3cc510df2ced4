package meta

import (
	"bytes"
	"maps"
)

// OpShareGroupConfig records a share group's configuration (Name: the
// group; Value: package broker's encoding of it, kept opaque here); an
// empty Value returns every config to its default. Every node serves
// share partitions (their leaders) with the group's configuration as it
// applied it, so a change is acted on by followers: it is published at
// once.
const OpShareGroupConfig Op = "share_group_config"

// applyShareGroupConfig applies an OpShareGroupConfig command. Runs with
// f.mu held.
func (f *FSM) applyShareGroupConfig(c Command) {
	if len(c.Value) == 0 {
		delete(f.shareCfgs, c.Name)
	} else {
		if f.shareCfgs == nil {
			f.shareCfgs = map[string][]byte{}
		}
		f.shareCfgs[c.Name] = bytes.Clone(c.Value)
	}
	f.shareCfgGen.Add(1)
}

// ShareGroupConfig is group's recorded configuration (nil: the
// defaults). The value is shared, not copied: the caller must not change
// it.
func (f *FSM) ShareGroupConfig(group string) []byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.shareCfgs[group]
}

// ShareGroupConfigGen counts the changes of the share groups'
// configurations this replica applied (and its restores): a reader that
// cached one reads it again when the count moved. It takes no lock.
func (f *FSM) ShareGroupConfigGen() uint64 { return f.shareCfgGen.Load() }

func cloneShareConfigs(m map[string][]byte) map[string][]byte {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
