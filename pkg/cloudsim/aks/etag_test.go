package aks_test

import (
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/droverhq/drover/pkg/cloudsim/aks"
)

// TestETags: clusters and pools carry eTags that change with every accepted write (a cluster
// write changes its pools' too, a pool write only the pool's), and If-Match / If-None-Match
// turn a stale read-modify-write into 412 PreconditionFailed, as AKS does.
func TestETags(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sim := newSim(t, aks.Options{})
	c := newSDK(t, sim, subID, secret, nil)
	created := createCluster(ctx, t, c, "etags", clusterBody("1.32"))
	clusterTag, poolTag := deref(created.ETag), deref(findPool(created, "system").ETag)
	if clusterTag == "" || poolTag == "" {
		t.Fatalf("eTags: cluster %q pool %q, want both set", clusterTag, poolTag)
	}
	ap, err := c.pools.Get(ctx, rg, "etags", "system", nil)
	if err != nil || deref(ap.Properties.ETag) != poolTag {
		t.Fatalf("agentPools GET eTag = %v (%v), want the profile's %q", ap.Properties, err, poolTag)
	}

	want412 := func(what string, err error) {
		t.Helper()
		if statusCode(err) != http.StatusPreconditionFailed || errorCode(err) != "PreconditionFailed" {
			t.Fatalf("%s: got %v, want 412 PreconditionFailed", what, err)
		}
	}

	// A cluster PUT with the eTag read is accepted and changes both eTags.
	body := created
	body.Properties.AgentPoolProfiles = nil
	body.Tags = map[string]*string{"env": to.Ptr("prod")}
	p, err := c.clusters.BeginCreateOrUpdate(ctx, rg, "etags", body, &armcontainerservice.ManagedClustersClientBeginCreateOrUpdateOptions{IfMatch: to.Ptr(clusterTag)})
	if err != nil {
		t.Fatalf("PUT with the current eTag: %v", err)
	}
	if _, err := p.PollUntilDone(ctx, poll); err != nil {
		t.Fatal(err)
	}
	got, err := c.clusters.Get(ctx, rg, "etags", nil)
	if err != nil {
		t.Fatal(err)
	}
	newCluster, newPool := deref(got.ETag), deref(findPool(got.ManagedCluster, "system").ETag)
	if newCluster == clusterTag || newPool == poolTag {
		t.Fatalf("after a cluster PUT: eTags %q/%q unchanged from %q/%q", newCluster, newPool, clusterTag, poolTag)
	}

	// The same body with the old eTag now fails, and changes nothing.
	body.Tags = map[string]*string{"env": to.Ptr("stale")}
	_, err = c.clusters.BeginCreateOrUpdate(ctx, rg, "etags", body, &armcontainerservice.ManagedClustersClientBeginCreateOrUpdateOptions{IfMatch: to.Ptr(clusterTag)})
	want412("cluster PUT with a stale eTag", err)
	_, err = c.clusters.BeginUpdateTags(ctx, rg, "etags", armcontainerservice.TagsObject{Tags: body.Tags}, &armcontainerservice.ManagedClustersClientBeginUpdateTagsOptions{IfMatch: to.Ptr(clusterTag)})
	want412("tags PATCH with a stale eTag", err)
	_, err = c.clusters.BeginCreateOrUpdate(ctx, rg, "etags", body, &armcontainerservice.ManagedClustersClientBeginCreateOrUpdateOptions{IfNoneMatch: to.Ptr("*")})
	want412("cluster PUT with If-None-Match * on an existing cluster", err)
	_, err = c.clusters.BeginCreateOrUpdate(ctx, rg, "absent", clusterBody("1.32"), &armcontainerservice.ManagedClustersClientBeginCreateOrUpdateOptions{IfMatch: to.Ptr(newCluster)})
	want412("cluster PUT with If-Match on a cluster that does not exist", err)
	if got, _ := c.clusters.Get(ctx, rg, "etags", nil); deref(got.Tags["env"]) != "prod" || deref(got.ETag) != newCluster {
		t.Fatalf("refused writes changed the cluster: tags %v eTag %q", derefMap(got.Tags), deref(got.ETag))
	}

	// A pool PUT with the pool's eTag changes that eTag only; a stale one fails.
	props := profileProps(t, findPool(got.ManagedCluster, "system"))
	props.Count = to.Ptr[int32](2)
	pp, err := c.pools.BeginCreateOrUpdate(ctx, rg, "etags", "system", armcontainerservice.AgentPool{Properties: props}, &armcontainerservice.AgentPoolsClientBeginCreateOrUpdateOptions{IfMatch: to.Ptr(newPool)})
	if err != nil {
		t.Fatalf("pool PUT with the current eTag: %v", err)
	}
	if _, err := pp.PollUntilDone(ctx, poll); err != nil {
		t.Fatal(err)
	}
	got, err = c.clusters.Get(ctx, rg, "etags", nil)
	if err != nil {
		t.Fatal(err)
	}
	if deref(got.ETag) != newCluster || deref(findPool(got.ManagedCluster, "system").ETag) == newPool {
		t.Fatalf("after a pool PUT: cluster eTag %q (was %q), pool eTag %q (was %q); want only the pool's changed",
			deref(got.ETag), newCluster, deref(findPool(got.ManagedCluster, "system").ETag), newPool)
	}
	props.Count = to.Ptr[int32](3)
	_, err = c.pools.BeginCreateOrUpdate(ctx, rg, "etags", "system", armcontainerservice.AgentPool{Properties: props}, &armcontainerservice.AgentPoolsClientBeginCreateOrUpdateOptions{IfMatch: to.Ptr(newPool)})
	want412("pool PUT with a stale eTag", err)
	_, err = c.pools.BeginDelete(ctx, rg, "etags", "system", &armcontainerservice.AgentPoolsClientBeginDeleteOptions{IfMatch: to.Ptr(newPool)})
	want412("pool DELETE with a stale eTag", err)
	if n := deref(findPool(got.ManagedCluster, "system").Count); n != 2 {
		t.Fatalf("pool count %d, want 2", n)
	}
}
