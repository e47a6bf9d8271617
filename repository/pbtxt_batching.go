package repository

import "fmt"

// pbDynamicBatching reads a config.pbtxt's dynamic_batching message into
// the fields config.yaml has: max_queue_delay_microseconds,
// preferred_batch_size (repeated) and default_queue_policy's
// max_queue_size. Any other field is an error naming it.
func pbDynamicBatching(f *pbField) (*DynamicBatching, error) {
	if err := pbOnly(f, "max_queue_delay_microseconds", "preferred_batch_size", "default_queue_policy"); err != nil {
		return nil, err
	}
	d := &DynamicBatching{}
	for _, sub := range f.Msg {
		switch sub.Name {
		case "max_queue_delay_microseconds":
			v, err := pbInt(sub)
			if err != nil {
				return nil, err
			}
			d.MaxQueueDelayMicroseconds = v
		case "preferred_batch_size":
			v, err := pbInt(sub)
			if err != nil {
				return nil, err
			}
			d.PreferredBatchSize = append(d.PreferredBatchSize, v)
		case "default_queue_policy":
			if err := pbOnly(sub, "max_queue_size"); err != nil {
				return nil, err
			}
			for _, n := range sub.Msg {
				v, err := pbInt(n)
				if err != nil {
					return nil, err
				}
				d.MaxQueueSize = v
			}
		}
	}
	return d, nil
}

// pbInstanceGroup reads one entry of a config.pbtxt's instance_group:
// name, kind (an identifier) and count. Any other field (gpus,
// rate_limiter, ...) is an error naming it.
func pbInstanceGroup(f *pbField) (InstanceGroup, error) {
	var g InstanceGroup
	if err := pbOnly(f, "name", "kind", "count"); err != nil {
		return g, err
	}
	for _, sub := range f.Msg {
		switch sub.Name {
		case "name":
			s, err := pbStr(sub)
			if err != nil {
				return g, err
			}
			g.Name = s
		case "kind":
			if sub.Value == nil || sub.Value.Kind != pbIdent {
				return g, fmt.Errorf("line %d: kind must be a KIND_* name", sub.Line)
			}
			g.Kind = sub.Value.Text
		case "count":
			n, err := pbInt(sub)
			if err != nil {
				return g, err
			}
			g.Count = n
		}
	}
	return g, nil
}
