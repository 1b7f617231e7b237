package gitrepo

import (
	"regexp"
	"strings"
)

// fleetKeys are the keys of Fleet's fleet.yaml (v0.16: FleetYAML, its inline BundleSpec and
// BundleDeploymentOptions, targetCustomizations, imageScans and overrideTargets), as dotted
// paths without list indexes. A key ending in ".*" holds keys of any name (label maps, Helm
// values, sections drover does not look into). A key a fleet.yaml sets that drover does not
// read is "not supported by drover" when it is one of these, and an unknown key (a typo)
// otherwise.
var fleetKeys = func() map[string]bool {
	selector := func(p string) []string {
		return []string{p + ".matchLabels.*", p + ".matchExpressions.key", p + ".matchExpressions.operator", p + ".matchExpressions.values"}
	}
	// BundleDeploymentOptions: top level and in every target customization.
	options := []string{
		"defaultNamespace", "namespace", "serviceAccount", "forceSyncGeneration", "keepResources",
		"deleteCRDResources", "deleteNamespace", "createNamespace",
		"namespaceLabels.*", "namespaceAnnotations.*", "ignore.conditions.*",
		"kustomize.dir",
		"helm.chart", "helm.repo", "helm.releaseName", "helm.version", "helm.timeoutSeconds",
		"helm.values.*", "helm.valuesFiles", "helm.valuesFrom.*", "helm.force", "helm.takeOwnership",
		"helm.maxHistory", "helm.waitForJobs", "helm.atomic", "helm.disablePreProcess", "helm.disableDNS",
		"helm.skipSchemaValidation", "helm.disableDependencyUpdate",
		"yaml.overlays",
		"diff.comparePatches.apiVersion", "diff.comparePatches.kind", "diff.comparePatches.name",
		"diff.comparePatches.namespace", "diff.comparePatches.operations.op",
		"diff.comparePatches.operations.path", "diff.comparePatches.operations.value.*",
		"diff.comparePatches.jsonPointers",
		"correctDrift.enabled", "correctDrift.force", "correctDrift.keepFailHistory",
		"downstreamResources.kind", "downstreamResources.name",
	}
	keys := append([]string{
		"name", "labels.*", "paused", "contentsId", "resources.*", "targets.*", "targetRestrictions.*",
		"helmOpOptions.*", "imageScans.*", "targetCustomizationMode",
		"rolloutStrategy.maxUnavailable", "rolloutStrategy.maxUnavailablePartitions",
		"rolloutStrategy.autoPartitionSize", "rolloutStrategy.partitions.*",
		"dependsOn.name", "dependsOn.acceptedStates",
		"overrideTargets.name", "overrideTargets.clusterName", "overrideTargets.clusterGroup",
		"targetCustomizations.name", "targetCustomizations.clusterName", "targetCustomizations.clusterGroup",
		"targetCustomizations.doNotDeploy",
	}, options...)
	for _, p := range []string{"dependsOn.selector", "overrideTargets.clusterSelector", "overrideTargets.clusterGroupSelector",
		"targetCustomizations.clusterSelector", "targetCustomizations.clusterGroupSelector"} {
		keys = append(keys, selector(p)...)
	}
	for _, o := range options {
		keys = append(keys, "targetCustomizations."+o)
	}
	out := map[string]bool{}
	for _, k := range keys {
		out[k] = true
	}
	return out
}()

var listIndex = regexp.MustCompile(`\[[0-9]+\]`)

// isFleetKey reports whether key (a dotted path with list indexes, as unknownKeys names it) is
// a key of Fleet's fleet.yaml.
func isFleetKey(key string) bool {
	k := listIndex.ReplaceAllString(key, "")
	if fleetKeys[k] || fleetKeys[k+".*"] {
		return true
	}
	for i := strings.LastIndex(k, "."); i > 0; i = strings.LastIndex(k[:i], ".") {
		if fleetKeys[k[:i]+".*"] {
			return true
		}
	}
	// A section set empty ("yaml: {}").
	for f := range fleetKeys {
		if strings.HasPrefix(f, k+".") {
			return true
		}
	}
	return false
}
