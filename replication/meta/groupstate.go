package meta

import (
	"maps"

	"github.com/logd/logd/offsets"
)

// OpGroupState records a consumer group's membership in its last
// completed generation (Group, Generation, and Value: package groups'
// encoding of a groups.GroupState, kept opaque here), so that the next
// metadata leader's coordinator takes the group over; an empty Value
// removes the record (the group has no member). A record older than the
// group's (a lower Generation) changes nothing and answers an error
// wrapping offsets.ErrGenerationTaken. OpDeleteGroup removes it too.
const OpGroupState Op = "group_state"

// GroupState is one group's recorded membership: its generation, and
// package groups' encoding of it.
type GroupState struct {
	Generation int32  `json:"generation"`
	Value      []byte `json:"value"`
}

// applyGroupState applies an OpGroupState command. Runs with f.mu held.
func (f *FSM) applyGroupState(c Command) error {
	old, ok := f.groups[c.Group]
	if ok && c.Generation < old.Generation {
		return &offsets.GenerationTakenError{Group: c.Group, Asked: c.Generation, Recorded: old.Generation}
	}
	if len(c.Value) == 0 {
		delete(f.groups, c.Group)
		return nil
	}
	if f.groups == nil {
		f.groups = map[string]GroupState{}
	}
	f.groups[c.Group] = GroupState{Generation: c.Generation, Value: c.Value}
	return nil
}

// GroupStates returns every group's recorded membership, by group. The
// values are shared, not copied: the caller must not change them.
func (f *FSM) GroupStates() map[string]GroupState {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return maps.Clone(f.groups)
}
