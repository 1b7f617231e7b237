// Package rke2 migrates RKE2 clusters described by a provisioning.cattle.io/v1 Cluster (Rancher's
// shape), held live in a cluster or in a YAML file. Edits merge with existing
// machineSelectorConfig entries, args and additionalManifest documents; nothing is clobbered.
package rke2

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/yamlnode"
)

const (
	// ControlPlaneRoleLabel selects control-plane machines in machineSelectorConfig.
	ControlPlaneRoleLabel = "rke.cattle.io/control-plane-role"
	// NodeControlPlaneLabel marks control-plane nodes in the downstream cluster.
	NodeControlPlaneLabel = "node-role.kubernetes.io/control-plane=true"

	kcmArg       = "kube-controller-manager-arg"
	lmArg        = "enable-leader-migration"
	providerKey  = "cloud-provider-name"
	helmChartAPI = "helm.cattle.io/v1"
	// ChartRepo is the aws-cloud-controller-manager chart repository.
	ChartRepo = "https://kubernetes.github.io/cloud-provider-aws"
)

// Editor is RKE2's document format; embed a Backend to make a Distribution.
type Editor struct{}

// Kind is rke2.
func (Editor) Kind() migrationv1alpha1.Distribution { return migrationv1alpha1.DistributionRKE2 }

// ControlPlaneLabel is RKE2's control-plane node label.
func (Editor) ControlPlaneLabel() string { return NodeControlPlaneLabel }

// MirrorPods is true: RKE2 runs kube-controller-manager as a static pod.
func (Editor) MirrorPods() bool { return true }

// KeepsNodeName is false: RKE2 names nodes after the host; the name check relies on EC2 naming.
func (Editor) KeepsNodeName([]byte, string) bool { return false }

// Inspect reads spec.kubernetesVersion and machineGlobalConfig.cloud-provider-name.
func (Editor) Inspect(doc []byte) (migration.DocInfo, error) {
	_, root, err := yamlnode.Parse(doc)
	if err != nil {
		return migration.DocInfo{}, err
	}
	return migration.DocInfo{
		KubernetesVersion: yamlnode.String(root, "spec", "kubernetesVersion"),
		Provider:          yamlnode.String(root, "spec", "rkeConfig", "machineGlobalConfig", providerKey),
	}, nil
}

// Edit makes step's change to a Cluster document.
func (Editor) Edit(doc []byte, step int, p migration.Params) ([]byte, error) {
	d, root, err := yamlnode.Parse(doc)
	if err != nil {
		return nil, err
	}
	spec := yamlnode.Ensure(root, "spec", yaml.MappingNode)
	rke := yamlnode.Ensure(spec, "rkeConfig", yaml.MappingNode)
	changed := false
	switch step {
	case migration.StepEnableLeaderMigration:
		changed = addLeaderMigration(rke)
	case migration.StepInstallCCM:
		changed, err = setCCM(rke, p, true)
	case migration.StepSwitchProvider:
		global := yamlnode.Ensure(rke, "machineGlobalConfig", yaml.MappingNode)
		changed = yamlnode.SetString(global, providerKey, "external", false)
		changed = removeLeaderMigration(rke) || changed
		if p.KubernetesVersion != "" {
			changed = yamlnode.SetString(spec, "kubernetesVersion", p.KubernetesVersion, false) || changed
		}
		if !p.LeaderMigration {
			var c bool
			c, err = setCCM(rke, p, false)
			changed = changed || c
		}
	case migration.StepDisableCCMLeaderMigration:
		changed, err = setCCM(rke, p, false)
	}
	if err != nil || !changed {
		return doc, err
	}
	return yamlnode.Encode(d)
}

// isControlPlaneSelector matches exactly "control-plane-role in (true)", as matchExpressions
// or matchLabels.
func isControlPlaneSelector(sel *yaml.Node) bool {
	if sel == nil {
		return false
	}
	ml, me := yamlnode.Get(sel, "matchLabels"), yamlnode.Get(sel, "matchExpressions")
	mlOK := ml == nil || yamlnode.Empty(ml)
	meOK := me == nil || yamlnode.Empty(me)
	if ml != nil && len(ml.Content) == 2 && yamlnode.String(ml, ControlPlaneRoleLabel) == "true" {
		return meOK
	}
	if me != nil && me.Kind == yaml.SequenceNode && len(me.Content) == 1 {
		e := me.Content[0]
		v := yamlnode.Get(e, "values")
		return mlOK && yamlnode.String(e, "key") == ControlPlaneRoleLabel && yamlnode.String(e, "operator") == "In" &&
			v != nil && len(v.Content) == 1 && v.Content[0].Value == "true"
	}
	return false
}

func controlPlaneEntry(rke *yaml.Node) *yaml.Node {
	msc := yamlnode.Get(rke, "machineSelectorConfig")
	if msc == nil || msc.Kind != yaml.SequenceNode {
		return nil
	}
	for _, e := range msc.Content {
		if isControlPlaneSelector(yamlnode.Get(e, "machineLabelSelector")) {
			return e
		}
	}
	return nil
}

func addLeaderMigration(rke *yaml.Node) bool {
	if e := controlPlaneEntry(rke); e != nil {
		args := yamlnode.Ensure(yamlnode.Ensure(e, "config", yaml.MappingNode), kcmArg, yaml.SequenceNode)
		if yamlnode.SeqHas(args, lmArg) {
			return false
		}
		args.Content = append(args.Content, yamlnode.Str(lmArg, false))
		return true
	}
	// A selector entry's key replaces the global one on the machines it selects, so carry the
	// global kube-controller-manager args over rather than dropping them.
	args := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if g := yamlnode.Path(rke, "machineGlobalConfig", kcmArg); g != nil && g.Kind == yaml.SequenceNode {
		for _, a := range g.Content {
			args.Content = append(args.Content, yamlnode.Str(a.Value, false))
		}
	}
	args.Content = append(args.Content, yamlnode.Str(lmArg, false))
	entry := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	cfg := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	yamlnode.Set(cfg, kcmArg, args)
	yamlnode.Set(entry, "config", cfg)
	var sel yaml.Node
	if err := yaml.Unmarshal([]byte("matchExpressions:\n- key: "+ControlPlaneRoleLabel+"\n  operator: In\n  values:\n  - 'true'\n"), &sel); err != nil {
		panic(err) // constant input
	}
	yamlnode.Set(entry, "machineLabelSelector", sel.Content[0])
	msc := yamlnode.Ensure(rke, "machineSelectorConfig", yaml.SequenceNode)
	msc.Content = append(msc.Content, entry)
	return true
}

// removeLeaderMigration removes the arg, and whatever became empty because of it.
func removeLeaderMigration(rke *yaml.Node) bool {
	e := controlPlaneEntry(rke)
	if e == nil {
		return false
	}
	cfg := yamlnode.Get(e, "config")
	args := yamlnode.Get(cfg, kcmArg)
	if !yamlnode.SeqRemove(args, lmArg) {
		return false
	}
	if yamlnode.Empty(args) || sameScalars(args, yamlnode.Path(rke, "machineGlobalConfig", kcmArg)) {
		// Only what step 1 put there (the arg, or the global args it carried over) is left.
		yamlnode.Delete(cfg, kcmArg)
	}
	if yamlnode.Empty(cfg) {
		msc := yamlnode.Get(rke, "machineSelectorConfig")
		out := msc.Content[:0]
		for _, x := range msc.Content {
			if x != e {
				out = append(out, x)
			}
		}
		msc.Content = out
		if yamlnode.Empty(msc) {
			yamlnode.Delete(rke, "machineSelectorConfig")
		}
	}
	return true
}

// HelmChart renders the aws-cloud-controller-manager HelmChart for additionalManifest.
func HelmChart(p migration.Params, leaderMigration bool) ([]byte, error) {
	spec := map[string]any{
		"chart": "aws-cloud-controller-manager", "repo": ChartRepo, "targetNamespace": "kube-system",
		"bootstrap": true, "valuesContent": string(migration.CCMValues(NodeControlPlaneLabel, p, leaderMigration)),
	}
	if p.CCM.ChartVersion != "" {
		spec["version"] = p.CCM.ChartVersion
	}
	out, err := sigsyaml.Marshal(map[string]any{
		"apiVersion": helmChartAPI, "kind": "HelmChart",
		"metadata": map[string]any{"name": "aws-cloud-controller-manager", "namespace": "kube-system"},
		"spec":     spec,
	})
	if err != nil {
		return nil, fmt.Errorf("render HelmChart: %w", err)
	}
	return out, nil
}

// setCCM puts the HelmChart into additionalManifest, replacing only a previous version of
// itself; the user's other manifests stay byte for byte.
func setCCM(rke *yaml.Node, p migration.Params, leaderMigration bool) (bool, error) {
	chart, err := HelmChart(p, leaderMigration)
	if err != nil {
		return false, err
	}
	old := yamlnode.String(rke, "additionalManifest")
	docs := SplitDocs(old)
	found := false
	for i, d := range docs {
		if IsCCMChart(d) {
			docs[i], found = string(chart), true
		}
	}
	if !found {
		docs = append(docs, string(chart))
	}
	var b strings.Builder
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(strings.TrimRight(d, "\n") + "\n")
	}
	if b.String() == old {
		return false, nil
	}
	n := yamlnode.Str(b.String(), false)
	n.Style = yaml.LiteralStyle
	yamlnode.Set(rke, "additionalManifest", n)
	return true, nil
}

// SplitDocs splits a multi-document YAML string on "---" lines, dropping empty documents.
func SplitDocs(s string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if strings.TrimSpace(cur.String()) != "" {
			out = append(out, cur.String())
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.TrimRight(line, " \t\r\n") == "---" {
			flush()
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return out
}

// IsCCMChart reports whether a manifest is the aws-cloud-controller-manager HelmChart.
func IsCCMChart(doc string) bool {
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := sigsyaml.Unmarshal(bytes.TrimSpace([]byte(doc)), &m); err != nil {
		return false
	}
	return m.Kind == "HelmChart" && m.Metadata.Name == "aws-cloud-controller-manager"
}

func sameScalars(a, b *yaml.Node) bool {
	if a == nil || b == nil || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if a.Content[i].Value != b.Content[i].Value {
			return false
		}
	}
	return true
}
