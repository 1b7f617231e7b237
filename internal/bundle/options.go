package bundle

import fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"

// DeploymentOptions are the options of the BundleDeployments of a Bundle with spec s: how every
// targeted cluster's agent applies its content. `drover bundle diff` uses them to compare a
// proposed Bundle spec with what a cluster runs on equal terms.
func DeploymentOptions(s *fleetv1alpha1.BundleSpec) fleetv1alpha1.BundleDeploymentOptions {
	return fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: s.DefaultNamespace, ForceConflicts: s.ForceConflicts,
		CorrectDrift: s.CorrectDrift, KeepResources: s.KeepResources, Diff: s.Diff.DeepCopy()}
}
