package aks_test

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/droverhq/drover/pkg/cloudsim/aks"
)

// TestWireNamesMatchSDK checks every JSON name the simulator sends against the SDK's own
// serialisation (models_serde.go): a raw response must survive an SDK unmarshal/marshal round
// trip unchanged, so no field is misnamed or unknown to the SDK.
func TestWireNamesMatchSDK(t *testing.T) {
	ctx := t.Context()
	sim := newSim(t, aks.Options{})
	c := newSDK(t, sim, subID, secret, nil)

	body := clusterBody("1.31")
	body.Properties.APIServerAccessProfile = &armcontainerservice.ManagedClusterAPIServerAccessProfile{AuthorizedIPRanges: []*string{to.Ptr("203.0.113.0/24")}}
	body.Properties.LinuxProfile = &armcontainerservice.LinuxProfile{AdminUsername: to.Ptr("azureuser"),
		SSH: &armcontainerservice.SSHConfiguration{PublicKeys: []*armcontainerservice.SSHPublicKey{{KeyData: to.Ptr("ssh-ed25519 AAAA")}}}}
	body.Properties.AddonProfiles = map[string]*armcontainerservice.ManagedClusterAddonProfile{
		"omsagent": {Enabled: to.Ptr(true), Config: map[string]*string{"logAnalyticsWorkspaceResourceID": to.Ptr("/subscriptions/x/ws")}},
	}
	body.Properties.AgentPoolProfiles = append(body.Properties.AgentPoolProfiles, &armcontainerservice.ManagedClusterAgentPoolProfile{
		Name: to.Ptr("user1"), Mode: to.Ptr(armcontainerservice.AgentPoolModeUser), Count: to.Ptr[int32](2),
		EnableAutoScaling: to.Ptr(true), MinCount: to.Ptr[int32](1), MaxCount: to.Ptr[int32](4),
		AvailabilityZones: []*string{to.Ptr("1")}, NodeLabels: map[string]*string{"a": to.Ptr("b")},
		NodeTaints: []*string{to.Ptr("k=v:NoSchedule")}, Tags: map[string]*string{"t": to.Ptr("u")},
		UpgradeSettings:     &armcontainerservice.AgentPoolUpgradeSettings{MaxSurge: to.Ptr("33%")},
		VnetSubnetID:        to.Ptr("/subscriptions/x/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/s"),
		OrchestratorVersion: to.Ptr("1.31.6"),
	})
	created := createCluster(ctx, t, c, "wire", body)
	if deref(created.Properties.KubernetesVersion) != "1.31" || deref(created.Properties.CurrentKubernetesVersion) != "1.31.7" {
		t.Fatalf("alias 1.31: kubernetesVersion %q current %q, want 1.31 / 1.31.7",
			deref(created.Properties.KubernetesVersion), deref(created.Properties.CurrentKubernetesVersion))
	}

	cred, err := azidentity.NewClientSecretCredential(tenantID, clientID, secret, sim.CredentialOptions())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{sim.URL() + "/.default"}})
	if err != nil {
		t.Fatalf("GetToken: %v", err)
	}
	base := sim.URL() + "/subscriptions/" + subID + "/resourceGroups/" + rg + "/providers/Microsoft.ContainerService/managedClusters"
	tests := []struct {
		name string
		url  string
		sdk  any
	}{
		{"managed cluster", base + "/wire", &armcontainerservice.ManagedCluster{}},
		{"agent pool", base + "/wire/agentPools/user1", &armcontainerservice.AgentPool{}},
		{"cluster list", base, &armcontainerservice.ManagedClusterListResult{}},
		{"pool list", base + "/wire/agentPools", &armcontainerservice.AgentPoolListResult{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, tt.url+"?api-version=2025-02-01", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tok.Token)
			resp, err := sim.HTTPClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d %v %s", tt.url, resp.StatusCode, err, raw)
			}
			if err := json.Unmarshal(raw, tt.sdk); err != nil {
				t.Fatalf("SDK unmarshal: %v", err)
			}
			again, err := json.Marshal(tt.sdk)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(again, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("the SDK does not round-trip the simulator's JSON (a field is misnamed or unknown)\nsimulator: %s\nSDK:       %s", raw, again)
			}
		})
	}
}
