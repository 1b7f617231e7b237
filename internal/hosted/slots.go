package hosted

import v1 "github.com/droverhq/drover/api/management/v1alpha1"

// Slots locates one provider's typed config in a Cluster and its upstream and applied copies in
// the status, and gives the tree accessors every Provider needs from them.
type Slots[C any] struct {
	// Config returns the address of spec.<provider>Config.
	Config func(c *v1.Cluster) **C
	// Status returns the addresses of status.<provider>Status.upstreamSpec and appliedSpec,
	// creating the provider status if create is set; nil, nil when it is absent.
	Status func(c *v1.Cluster, create bool) (upstream, applied **C)
}

// ConfigTree is the config as a tree.
func (s Slots[C]) ConfigTree(c *v1.Cluster) (map[string]any, error) { return ToTree(*s.Config(c)) }

// UpstreamTree is status.upstreamSpec as a tree (nil when absent).
func (s Slots[C]) UpstreamTree(c *v1.Cluster) (map[string]any, error) {
	if up, _ := s.Status(c, false); up != nil {
		return ToTree(*up)
	}
	return nil, nil
}

// AppliedTree is status.appliedSpec as a tree (nil when absent).
func (s Slots[C]) AppliedTree(c *v1.Cluster) (map[string]any, error) {
	if _, applied := s.Status(c, false); applied != nil {
		return ToTree(*applied)
	}
	return nil, nil
}

// SetConfigTree replaces the config with tree.
func (s Slots[C]) SetConfigTree(c *v1.Cluster, tree map[string]any) error {
	cfg := new(C)
	if err := FromTree(tree, cfg); err != nil {
		return err
	}
	*s.Config(c) = cfg
	return nil
}

// SetStatusTrees writes the upstream and applied trees that are not nil.
func (s Slots[C]) SetStatusTrees(c *v1.Cluster, upstream, applied map[string]any) error {
	up, ap := s.Status(c, true)
	for _, t := range []struct {
		tree map[string]any
		slot **C
	}{{upstream, up}, {applied, ap}} {
		if t.tree == nil {
			continue
		}
		v := new(C)
		if err := FromTree(t.tree, v); err != nil {
			return err
		}
		*t.slot = v
	}
	return nil
}
