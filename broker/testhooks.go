package broker

// AppendUncheckedForTest appends b to a partition's log as it is, past
// CheckBatch: a batch stored before produce validated records, which
// readers must still get past. For the front-ends' tests only.
func (b *Broker) AppendUncheckedForTest(topic string, part int32, data []byte) error {
	p, err := b.topics.Partition(topic, part)
	if err != nil {
		return err
	}
	_, err = p.Log.Append(data)
	return err
}

// ActiveSegmentBaseForTest is the base offset of a partition's active
// segment, which compaction never touches. For the front-ends' tests only.
func (b *Broker) ActiveSegmentBaseForTest(topic string, part int32) (int64, error) {
	p, err := b.topics.Partition(topic, part)
	if err != nil {
		return 0, err
	}
	segs := p.Log.Segments()
	return segs[len(segs)-1].BaseOffset, nil
}
