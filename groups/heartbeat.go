package groups

// Heartbeat keeps the member's session alive. It returns
// ErrRebalanceInProgress while a rebalance is being prepared (the member must
// re-join, revoking first under an eager protocol), ErrUnknownMember if the
// member was removed, and a *GenerationError if the member is behind.
func (c *Coordinator) Heartbeat(group, memberID string, generation int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, m, err := c.lookup(group, memberID)
	if err != nil {
		return err
	}
	if generation != g.generation {
		return &GenerationError{Group: g.name, Member: m.id, Given: generation, Current: g.generation}
	}
	c.touch(m)
	if g.state == PreparingRebalance {
		return rebalancing(g.name)
	}
	return nil
}

// LeaveGroup removes the member at once and rebalances the rest (a clean
// shutdown: Close in the client, SIGINT/SIGTERM in the CLI). Kafka's batch
// LeaveGroup calls it once per member.
func (c *Coordinator) LeaveGroup(group, memberID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, m, err := c.lookup(group, memberID)
	if err != nil {
		return err
	}
	c.removeMember(g, m)
	return nil
}
