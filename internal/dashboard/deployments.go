package dashboard

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
)

// What the pages read of a BundleDeployment: its name and namespace, the labels naming its
// Bundle, cluster and target customization, spec.deploymentID and status.display (the state
// the agent computed: bundle.DisplayState). A BundleDeployment is kept as only that, whether
// listed as a Table or delivered whole by the watch, so both render the same.

// deploymentLabels are the labels the pages read, with the printer column carrying each.
var deploymentLabels = []struct{ label, column string }{{bundle.BundleNameLabel, "Bundle"}, {bundle.BundleNamespaceLabel, "Bundle-Namespace"},
	{fleetv1alpha1.ClusterLabel, "Cluster"}, {fleetv1alpha1.ClusterNamespaceLabel, "Cluster-Namespace"}, {bundle.CustomizationLabel, "Customization"}}

// deploymentColumns are the BundleDeployment printer columns read (the kubebuilder:printcolumn
// markers of api/fleet/v1alpha1/bundledeployment_types.go; Name is the API server's own):
// metadata, spec and display, then the labels' (the index of deploymentLabels' i is
// colLabels+i).
var deploymentColumns = func() []string {
	cols := []string{"Name", "BD-Namespace", "Deployment-ID", "State-Deployment-ID", "State", "Message", "Drift-Corrected"}
	for _, l := range deploymentLabels {
		cols = append(cols, l.column)
	}
	return cols
}()

const (
	colName = iota
	colNamespace
	colDeploymentID
	colDisplayID
	colState
	colMessage
	colDrift
	colLabels
)

var deploymentTable = &tableSpec{columns: deploymentColumns, object: deploymentFromRow}

// deploymentFromRow makes a BundleDeployment from a Table row's cells (deploymentColumns).
func deploymentFromRow(cells []*string) client.Object {
	str := func(i int) string {
		if cells[i] == nil {
			return ""
		}
		return *cells[i]
	}
	bd := &fleetv1alpha1.BundleDeployment{}
	bd.Name, bd.Namespace = str(colName), str(colNamespace)
	for i, l := range deploymentLabels {
		if v := cells[colLabels+i]; v != nil {
			if bd.Labels == nil {
				bd.Labels = map[string]string{}
			}
			bd.Labels[l.label] = *v
		}
	}
	bd.Spec.DeploymentID = str(colDeploymentID)
	d := fleetv1alpha1.BundleDeploymentDisplay{DeploymentID: str(colDisplayID), State: str(colState), Message: str(colMessage),
		DriftCorrected: str(colDrift)}
	if d != (fleetv1alpha1.BundleDeploymentDisplay{}) {
		bd.Status.Display = &d
	}
	return bd
}

// trimDeployment keeps of a whole BundleDeployment what a Table row of it carries.
func trimDeployment(in *fleetv1alpha1.BundleDeployment) *fleetv1alpha1.BundleDeployment {
	bd := &fleetv1alpha1.BundleDeployment{}
	bd.Name, bd.Namespace = in.Name, in.Namespace
	for _, l := range deploymentLabels {
		if v, ok := in.Labels[l.label]; ok {
			if bd.Labels == nil {
				bd.Labels = map[string]string{}
			}
			bd.Labels[l.label] = v
		}
	}
	bd.Spec.DeploymentID = in.Spec.DeploymentID
	if d := in.Status.Display; d != nil && *d != (fleetv1alpha1.BundleDeploymentDisplay{}) {
		c := *d
		bd.Status.Display = &c
	}
	return bd
}
