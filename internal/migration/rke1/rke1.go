// Package rke1 migrates RKE1 clusters: cluster.yml is edited in place (comments and key order
// kept), applied with a user-given command (default `rke up --config {file}`), and the CCM is
// installed with Helm.
package rke1

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/yamlnode"
)

// Defaults for the commands drover runs.
const (
	DefaultApplyCommand     = "rke up --config {file}"
	DefaultHelmCommand      = "helm upgrade --install aws-cloud-controller-manager aws-cloud-controller-manager --repo https://kubernetes.github.io/cloud-provider-aws --namespace kube-system --values {values}"
	DefaultUninstallCommand = "helm uninstall aws-cloud-controller-manager --namespace kube-system"
	// NodeControlPlaneLabel marks RKE1 control-plane nodes.
	NodeControlPlaneLabel = "node-role.kubernetes.io/controlplane=true"
	lmArg                 = "enable-leader-migration"
	// RancherKey wraps the RKE configuration in the cluster.yml of a Rancher-provisioned
	// cluster (Rancher's "Edit as YAML"), next to Rancher's own settings.
	RancherKey = "rancher_kubernetes_engine_config"
)

// parse returns the document and the mapping holding the RKE configuration: the root of a
// plain cluster.yml, or its rancher_kubernetes_engine_config. Edits are made there.
func parse(doc []byte) (*yaml.Node, *yaml.Node, error) {
	d, root, err := yamlnode.Parse(doc)
	if err != nil {
		return nil, nil, err
	}
	if w := yamlnode.Get(root, RancherKey); w != nil {
		if w.Kind != yaml.MappingNode {
			return nil, nil, fmt.Errorf("cluster.yml: %s is not a mapping: put the RKE configuration (kubernetes_version, cloud_provider, services) under it", RancherKey)
		}
		return d, w, nil
	}
	return d, root, nil
}

// Cluster is an RKE1 cluster.yml on disk.
type Cluster struct {
	migration.FileBackend
	// HelmCommand installs or upgrades the CCM ({values} is a values file), UninstallCommand
	// removes it.
	HelmCommand, UninstallCommand string
	// UseInstanceMetadataHostname is written to cloud_provider in the switch.
	UseInstanceMetadataHostname bool
}

// New returns a cluster.yml migration with default commands where empty.
func New(path, apply string, run migration.Runner) *Cluster {
	if apply == "" {
		apply = DefaultApplyCommand
	}
	return &Cluster{
		FileBackend: migration.FileBackend{Path: path, Command: apply, Run: run},
		HelmCommand: DefaultHelmCommand, UninstallCommand: DefaultUninstallCommand,
	}
}

var (
	_ migration.DocChecker   = (*Cluster)(nil)
	_ migration.Distribution = (*Cluster)(nil)
	_ migration.CCMInstaller = (*Cluster)(nil)
)

// Kind is rke1.
func (*Cluster) Kind() migrationv1alpha1.Distribution { return migrationv1alpha1.DistributionRKE1 }

// ControlPlaneLabel is RKE1's control-plane node label.
func (*Cluster) ControlPlaneLabel() string { return NodeControlPlaneLabel }

// MirrorPods is false: RKE1 runs kube-controller-manager as a Docker container, invisible to the API.
func (*Cluster) MirrorPods() bool { return false }

// KeepsNodeName reports that a node whose hostname_override is its name keeps it.
func (c *Cluster) KeepsNodeName(doc []byte, node string) bool {
	_, root, err := parse(doc)
	if err != nil {
		return false
	}
	nodes := yamlnode.Get(root, "nodes")
	if nodes == nil {
		return false
	}
	for _, n := range nodes.Content {
		if yamlnode.String(n, "hostname_override") == node {
			return !c.UseInstanceMetadataHostname // IMDS then names the node, not the override
		}
	}
	return false
}

// CheckDoc refuses cluster.yml node entries with neither internal_address nor
// hostname_override: with external-aws, rke finds nodes by InternalIP and fails with "not
// found" without them (rancher/rke#3445).
func (*Cluster) CheckDoc(doc []byte) []string {
	_, root, err := parse(doc)
	if err != nil {
		return []string{fmt.Sprintf("cannot parse cluster.yml: %v", err)}
	}
	nodes := yamlnode.Get(root, "nodes")
	if nodes == nil {
		return nil
	}
	var out []string
	for _, n := range nodes.Content {
		if yamlnode.String(n, "internal_address") == "" && yamlnode.String(n, "hostname_override") == "" {
			out = append(out, fmt.Sprintf("cluster.yml node %s has neither internal_address nor hostname_override: with external-aws, rke up cannot find the node (rke#3445); set internal_address to its private IP (and hostname_override to its current node name) before migrating", yamlnode.String(n, "address")))
		}
	}
	return out
}

// Inspect reads kubernetes_version and cloud_provider.name (inside rancher_kubernetes_engine_config
// if the document has it).
func (*Cluster) Inspect(doc []byte) (migration.DocInfo, error) {
	_, root, err := parse(doc)
	if err != nil {
		return migration.DocInfo{}, err
	}
	return migration.DocInfo{
		KubernetesVersion: yamlnode.String(root, "kubernetes_version"),
		Provider:          yamlnode.String(root, "cloud_provider", "name"),
	}, nil
}

// Edit makes step's change to cluster.yml (inside rancher_kubernetes_engine_config if the
// document has it).
func (c *Cluster) Edit(doc []byte, step int, p migration.Params) ([]byte, error) {
	d, root, err := parse(doc)
	if err != nil {
		return nil, err
	}
	changed := false
	switch step {
	case migration.StepEnableLeaderMigration:
		kc := yamlnode.Ensure(yamlnode.Ensure(root, "services", yaml.MappingNode), "kube-controller", yaml.MappingNode)
		changed = yamlnode.SetString(yamlnode.Ensure(kc, "extra_args", yaml.MappingNode), lmArg, "true", true)
	case migration.StepSwitchProvider:
		cp := yamlnode.Ensure(root, "cloud_provider", yaml.MappingNode)
		changed = yamlnode.SetString(cp, "name", "external-aws", false)
		imds := "false"
		if c.UseInstanceMetadataHostname {
			imds = "true"
		}
		if v := yamlnode.Get(cp, "useInstanceMetadataHostname"); v == nil || v.Value != imds {
			yamlnode.Set(cp, "useInstanceMetadataHostname", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: imds})
			changed = true
		}
		kc := yamlnode.Path(root, "services", "kube-controller")
		args := yamlnode.Get(kc, "extra_args")
		if yamlnode.Delete(args, lmArg) {
			changed = true
			if yamlnode.Empty(args) {
				yamlnode.Delete(kc, "extra_args")
			}
		}
		if p.KubernetesVersion != "" {
			changed = yamlnode.SetString(root, "kubernetes_version", p.KubernetesVersion, false) || changed
		}
	}
	if !changed {
		return doc, nil
	}
	return yamlnode.Encode(d)
}

func (c *Cluster) valuesPath() string { return c.Path + ".aws-ccm-values.yaml" }

// InstallCommand is the Helm command line (for the plan).
func (c *Cluster) InstallCommand(p migration.Params) string {
	cmd := c.HelmCommand
	if p.CCM.ChartVersion != "" {
		cmd += " --version " + p.CCM.ChartVersion
	}
	return strings.Join(migration.Expand(cmd, map[string]string{"values": c.valuesPath()}), " ")
}

// InstallCCM writes the values next to cluster.yml and runs Helm.
func (c *Cluster) InstallCCM(ctx context.Context, values []byte, p migration.Params) error {
	if err := migration.WriteFileAtomic(c.valuesPath(), values); err != nil {
		return err
	}
	cmd := c.HelmCommand
	if p.CCM.ChartVersion != "" {
		cmd += " --version " + p.CCM.ChartVersion
	}
	return c.run(ctx, migration.Expand(cmd, map[string]string{"values": c.valuesPath()}))
}

// UninstallCCM removes the chart and its values file.
func (c *Cluster) UninstallCCM(ctx context.Context) error {
	if err := c.run(ctx, migration.Expand(c.UninstallCommand, nil)); err != nil {
		return err
	}
	if err := os.Remove(c.valuesPath()); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove CCM values: %w", err)
	}
	return nil
}

func (c *Cluster) run(ctx context.Context, argv []string) error {
	return migration.RunCommand(ctx, c.Run, argv)
}
