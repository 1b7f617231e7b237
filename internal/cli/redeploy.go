package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// redeployEffect is what a redeploy does, printed after it.
const redeployEffect = "every targeted cluster re-applies its resources, re-creating deleted ones and setting back fields changed downstream (within the rollout settings)"

func newBundleRedeployCommand(k *kubeOptions) *cobra.Command {
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "redeploy NAME...",
		Short: "Re-apply Bundles on every targeted cluster now, undoing changes made downstream (Fleet's force update)",
		Long: "Increments the Bundles' spec.forceSyncGeneration: each targeted cluster's agent applies every resource again, " +
			"creating deleted ones and taking back fields someone changed downstream, once (spec.correctDrift does it on every drift). " +
			"It is a new version of the Bundle: paused rollouts and maxUnavailable apply.",
		Example:           "  drover bundle redeploy web --wait",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(k, fleetv1alpha1.DefaultWorkspaceNamespace, &fleetv1alpha1.BundleList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := bundleClient(k)
			if err != nil {
				return err
			}
			names, err := objectNames(&fleetv1alpha1.Bundle{}, args)
			if err != nil {
				return err
			}
			var done []string
			failed := forEachName(cmd, names, func(name string) error {
				if _, err := bumpSyncGeneration(cmd.Context(), c, client.ObjectKey{Namespace: ns, Name: name}, "bundle", &fleetv1alpha1.Bundle{},
					func(o client.Object) *int64 { return &o.(*fleetv1alpha1.Bundle).Spec.ForceSyncGeneration }); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "bundle.fleet.drover.io/%s redeploying: %s\n", name, redeployEffect)
				done = append(done, name)
				return nil
			})
			if !w.wait {
				return failed
			}
			for _, name := range done {
				key := client.ObjectKey{Namespace: ns, Name: name}
				if err := waitUntil(cmd.Context(), cmd.OutOrStdout(), "bundle "+ns+"/"+name, w.timeout, bundleReady(c, key)); err != nil {
					return err
				}
			}
			return failed
		},
	}
	w.add(cmd, "every targeted cluster is ready", 10*time.Minute)
	return cmd
}

func newGitRepoRedeployCommand(k *kubeOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "redeploy NAME...",
		Short: "Re-apply every Bundle of a GitRepo on its clusters now, undoing changes made downstream (Fleet's force update)",
		Long: "Increments the GitRepo's spec.forceSyncGeneration (Fleet's field of that name), which drover copies to each of its Bundles: " +
			"each targeted cluster re-applies their resources once, creating deleted ones and taking back fields changed downstream.",
		Example:           "  drover gitrepo redeploy apps",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(k, fleetv1alpha1.DefaultWorkspaceNamespace, &fleetv1alpha1.GitRepoList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := bundleClient(k)
			if err != nil {
				return err
			}
			names, err := objectNames(&fleetv1alpha1.GitRepo{}, args)
			if err != nil {
				return err
			}
			return forEachName(cmd, names, func(name string) error {
				gen, err := bumpSyncGeneration(cmd.Context(), c, client.ObjectKey{Namespace: ns, Name: name}, "gitrepo", &fleetv1alpha1.GitRepo{},
					func(o client.Object) *int64 { return &o.(*fleetv1alpha1.GitRepo).Spec.ForceSyncGeneration })
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "gitrepo.fleet.drover.io/%s redeploying (forceSyncGeneration %d): its Bundles are written again and %s\n",
					name, gen, redeployEffect)
				return nil
			})
		},
	}
	return cmd
}

// bumpSyncGeneration increments the spec.forceSyncGeneration (gen points at it in an object of
// obj's kind) of the kind's object at key, and returns the new value. With an optimistic lock:
// two redeploys at once are two increments, or one fails and is retried.
func bumpSyncGeneration(ctx context.Context, c client.Client, key client.ObjectKey, kind string, obj client.Object, gen func(client.Object) *int64) (int64, error) {
	for range 5 {
		cur := obj.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, key, cur); err != nil {
			if apierrors.IsNotFound(err) {
				return 0, fmt.Errorf("%s %q not found in namespace %s", kind, key.Name, key.Namespace)
			}
			return 0, fmt.Errorf("get %s %s: %w", kind, key, err)
		}
		patch := client.MergeFromWithOptions(cur.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
		*gen(cur)++
		err := c.Patch(ctx, cur, patch, client.FieldOwner(cliFieldManager))
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("redeploy %s %s: %w", kind, key, err)
		}
		return *gen(cur), nil
	}
	return 0, fmt.Errorf("redeploy %s %s: it kept changing; try again", kind, key)
}
