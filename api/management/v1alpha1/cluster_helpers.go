package v1alpha1

// Provider-neutral reads of a Cluster, shared by the CLI and the dashboard.

// Location is the cluster's region (EKS), location (AKS) or region or zone (GKE); "" if unset.
func (c *Cluster) Location() string {
	switch {
	case c.Spec.EKSConfig != nil:
		return c.Spec.EKSConfig.Region
	case c.Spec.AKSConfig != nil:
		return c.Spec.AKSConfig.ResourceLocation
	case c.Spec.GKEConfig != nil:
		return c.Spec.GKEConfig.Region + c.Spec.GKEConfig.Zone
	}
	return ""
}

// KubernetesVersion is the configured Kubernetes version, else the one last read from the
// provider (an imported cluster usually leaves it unmanaged); "" if neither is known.
func (c *Cluster) KubernetesVersion() string {
	var v *string
	switch s := &c.Status; {
	case c.Spec.EKSConfig != nil:
		v = c.Spec.EKSConfig.KubernetesVersion
		if v == nil && s.EKSStatus != nil && s.EKSStatus.UpstreamSpec != nil {
			v = s.EKSStatus.UpstreamSpec.KubernetesVersion
		}
	case c.Spec.AKSConfig != nil:
		v = c.Spec.AKSConfig.KubernetesVersion
		if v == nil && s.AKSStatus != nil && s.AKSStatus.UpstreamSpec != nil {
			v = s.AKSStatus.UpstreamSpec.KubernetesVersion
		}
	case c.Spec.GKEConfig != nil:
		v = c.Spec.GKEConfig.KubernetesVersion
		if v == nil && s.GKEStatus != nil && s.GKEStatus.UpstreamSpec != nil {
			v = s.GKEStatus.UpstreamSpec.KubernetesVersion
		}
	}
	if v == nil {
		return ""
	}
	return *v
}

// Imported reports whether the cluster was imported (drover did not create it).
func (c *Cluster) Imported() bool {
	switch {
	case c.Spec.EKSConfig != nil:
		return c.Spec.EKSConfig.Imported
	case c.Spec.AKSConfig != nil:
		return c.Spec.AKSConfig.Imported
	case c.Spec.GKEConfig != nil:
		return c.Spec.GKEConfig.Imported
	}
	return false
}
