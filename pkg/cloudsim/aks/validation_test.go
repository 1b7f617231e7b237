package aks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/droverhq/drover/pkg/cloudsim/aks"
)

type poolProps = armcontainerservice.ManagedClusterAgentPoolProfileProperties

// TestValidation checks that invalid requests are refused with AKS's status, error code and a
// recognisable message, and leave the cluster untouched.
func TestValidation(t *testing.T) {
	ctx := t.Context()
	sim := newSim(t, aks.Options{})
	c := newSDK(t, sim, subID, secret, nil)
	createCluster(ctx, t, c, "valid", clusterBody("1.31.6"))
	if _, err := putPool(ctx, c, "valid", "user1", func(p *poolProps) { p.Count = to.Ptr[int32](1) }); err != nil {
		t.Fatalf("create user pool: %v", err)
	}

	putCluster := func(change func(*armcontainerservice.ManagedCluster)) func(context.Context) error {
		return func(ctx context.Context) error {
			got, err := c.clusters.Get(ctx, rg, "valid", nil)
			if err != nil {
				return err
			}
			mc := got.ManagedCluster
			change(&mc)
			_, err = c.clusters.BeginCreateOrUpdate(ctx, rg, "valid", mc, nil)
			return err
		}
	}
	createNew := func(change func(*armcontainerservice.ManagedCluster)) func(context.Context) error {
		return func(ctx context.Context) error {
			mc := clusterBody("1.31.6")
			change(&mc)
			_, err := c.clusters.BeginCreateOrUpdate(ctx, rg, "new", mc, nil)
			return err
		}
	}
	putPoolReq := func(pool string, change func(*poolProps)) func(context.Context) error {
		return func(ctx context.Context) error {
			props := &poolProps{}
			if got, err := c.pools.Get(ctx, rg, "valid", pool, nil); err == nil {
				props = got.Properties
			}
			change(props)
			_, err := c.pools.BeginCreateOrUpdate(ctx, rg, "valid", pool, armcontainerservice.AgentPool{Properties: props}, nil)
			return err
		}
	}
	autoscale := func(count, lo, hi int32) func(*poolProps) {
		return func(p *poolProps) {
			p.EnableAutoScaling, p.Count, p.MinCount, p.MaxCount = to.Ptr(true), to.Ptr(count), to.Ptr(lo), to.Ptr(hi)
		}
	}

	tests := []struct {
		name     string
		do       func(context.Context) error
		status   int
		code     string
		contains string
	}{
		{"version downgrade", putCluster(func(mc *armcontainerservice.ManagedCluster) { mc.Properties.KubernetesVersion = to.Ptr("1.30.11") }),
			400, "OperationNotAllowed", "Downgrading Kubernetes version 1.31.6 to 1.30.11 is not allowed"},
		{"minor version skip", putCluster(func(mc *armcontainerservice.ManagedCluster) { mc.Properties.KubernetesVersion = to.Ptr("1.33.1") }),
			400, "OperationNotAllowed", "Upgrading Kubernetes version 1.31.6 to 1.33.1 is not allowed. Available upgrades: [1.32.3 1.32.2 1.31.7]"},
		{"unsupported version", putCluster(func(mc *armcontainerservice.ManagedCluster) { mc.Properties.KubernetesVersion = to.Ptr("1.20.1") }),
			400, "K8sVersionNotSupported", "Version 1.20.1 is not supported"},
		{"unsupported alias", putCluster(func(mc *armcontainerservice.ManagedCluster) { mc.Properties.KubernetesVersion = to.Ptr("1.40") }),
			400, "UnsupportedAliasMinorVersion", "1.40 is not a supported Kubernetes version"},
		{"immutable dnsPrefix", putCluster(func(mc *armcontainerservice.ManagedCluster) { mc.Properties.DNSPrefix = to.Ptr("other") }),
			400, "PropertyChangeNotAllowed", "dnsPrefix"},
		{"bad authorized IP range", putCluster(func(mc *armcontainerservice.ManagedCluster) {
			mc.Properties.APIServerAccessProfile = &armcontainerservice.ManagedClusterAPIServerAccessProfile{AuthorizedIPRanges: []*string{to.Ptr("not-a-cidr")}}
		}), 400, "InvalidParameter", "not-a-cidr"},
		{"last system pool to User in cluster PUT", putCluster(func(mc *armcontainerservice.ManagedCluster) {
			mc.Properties.AgentPoolProfiles[0].Mode = to.Ptr(armcontainerservice.AgentPoolModeUser)
		}), 400, "MustDefineAtLeastOneSystemPool", "at least one system pool"},
		{"delete last system pool", func(ctx context.Context) error {
			_, err := c.pools.BeginDelete(ctx, rg, "valid", "system", nil)
			return err
		}, 400, "OperationNotAllowed", "last System mode agent pool"},
		{"last system pool to User", putPoolReq("system", func(p *poolProps) { p.Mode = to.Ptr(armcontainerservice.AgentPoolModeUser) }),
			400, "MustDefineAtLeastOneSystemPool", "last System mode pool"},
		{"pool newer than control plane", putPoolReq("user1", func(p *poolProps) { p.OrchestratorVersion = to.Ptr("1.32.3") }),
			400, "NodePoolMcVersionIncompatible", "control plane version 1.31.6"},
		{"pool version downgrade", putPoolReq("user1", func(p *poolProps) { p.OrchestratorVersion = to.Ptr("1.30.11") }),
			400, "OperationNotAllowed", "Downgrading"},
		{"autoscaling count above max", putPoolReq("user1", autoscale(5, 1, 3)), 400, "InvalidParameter", "count 5 must be between minCount 1 and maxCount 3"},
		{"autoscaling count below min", putPoolReq("user1", autoscale(1, 2, 3)), 400, "InvalidParameter", "must be between minCount"},
		{"autoscaling min above max", putPoolReq("user1", autoscale(3, 4, 2)), 400, "InvalidParameter", "minCount 4 must be less than or equal to maxCount 2"},
		{"autoscaling without bounds", putPoolReq("user1", func(p *poolProps) { p.EnableAutoScaling, p.MinCount, p.MaxCount = to.Ptr(true), nil, nil }),
			400, "InvalidParameter", "must be specified when enableAutoScaling is true"},
		{"bounds without autoscaling", putPoolReq("user1", func(p *poolProps) {
			p.EnableAutoScaling, p.MinCount, p.MaxCount = to.Ptr(false), to.Ptr[int32](1), to.Ptr[int32](3)
		}),
			400, "InvalidParameter", "must be null when enableAutoScaling is false"},
		{"system pool with zero nodes", putPoolReq("system", func(p *poolProps) { p.Count = to.Ptr[int32](0) }),
			400, "InvalidParameter", "count 0 must be within [1, 1000]"},
		{"change vmSize", putPoolReq("user1", func(p *poolProps) { p.VMSize = to.Ptr("Standard_E8s_v5") }),
			400, "PropertyChangeNotAllowed", "vmSize"},
		{"invalid taint", putPoolReq("user1", func(p *poolProps) { p.NodeTaints = []*string{to.Ptr("no-effect")} }),
			400, "InvalidParameter", "node taint 'no-effect' is invalid"},
		{"pool name with capitals", putPoolReq("Pool1", func(p *poolProps) {}), 400, "InvalidParameter", "agent pool name 'Pool1' is invalid"},
		{"pool name too long", putPoolReq("abcdefghijklm", func(p *poolProps) {}), 400, "InvalidParameter", "at most 12 characters"},
		{"create without location", createNew(func(mc *armcontainerservice.ManagedCluster) { mc.Location = nil }),
			400, "LocationRequired", "location property is required"},
		{"create without dnsPrefix", createNew(func(mc *armcontainerservice.ManagedCluster) { mc.Properties.DNSPrefix = nil }),
			400, "InvalidParameter", "dnsPrefix"},
		{"create without system pool", createNew(func(mc *armcontainerservice.ManagedCluster) {
			mc.Properties.AgentPoolProfiles[0].Mode = to.Ptr(armcontainerservice.AgentPoolModeUser)
		}), 400, "MustDefineAtLeastOneSystemPool", "at least one system pool"},
		{"get missing cluster", func(ctx context.Context) error {
			_, err := c.clusters.Get(ctx, rg, "missing", nil)
			return err
		}, 404, "ResourceNotFound", "managedClusters/missing"},
		{"pool of missing cluster", func(ctx context.Context) error {
			_, err := c.pools.Get(ctx, rg, "missing", "system", nil)
			return err
		}, 404, "ParentResourceNotFound", "Parent resource 'missing' not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do(t.Context())
			if statusCode(err) != tt.status || errorCode(err) != tt.code || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("err = %v\nwant %d %s containing %q", err, tt.status, tt.code, tt.contains)
			}
		})
	}

	st, ok := sim.ManagedCluster(subID, rg, "valid")
	if !ok || deref(st.Properties.ProvisioningState) != "Succeeded" || deref(st.Properties.CurrentKubernetesVersion) != "1.31.6" || len(st.Properties.AgentPoolProfiles) != 2 {
		t.Fatalf("refused requests changed the cluster: %v %+v", ok, st.Properties)
	}
	if _, ok := sim.ManagedCluster(subID, rg, "new"); ok {
		t.Fatal("a refused create left a cluster behind")
	}
}

func TestConfiguredResourceGroups(t *testing.T) {
	sim := newSim(t, aks.Options{ResourceGroups: []string{rg}})
	c := newSDK(t, sim, subID, secret, nil)
	if _, err := c.clusters.Get(t.Context(), "nope", "x", nil); statusCode(err) != 404 || errorCode(err) != "ResourceGroupNotFound" {
		t.Fatalf("unknown group: %v", err)
	}
	if _, err := c.clusters.Get(t.Context(), strings.ToUpper(rg), "x", nil); errorCode(err) != "ResourceNotFound" {
		t.Fatalf("configured group (any case): %v", err)
	}
}
