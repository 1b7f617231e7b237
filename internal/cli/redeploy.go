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
				if err := redeploy(cmd.Context(), c, client.ObjectKey{Namespace: ns, Name: name}); err != nil {
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
				return redeployGitRepo(cmd, c, client.ObjectKey{Namespace: ns, Name: name})
			})
		},
	}
	return cmd
}

// redeploy increments a Bundle's spec.forceSyncGeneration (optimistic lock: two redeploys at
// once are two increments, or one fails and is retried).
func redeploy(ctx context.Context, c client.Client, key client.ObjectKey) error {
	for range 5 {
		b := &fleetv1alpha1.Bundle{}
		if err := c.Get(ctx, key, b); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("bundle %q not found in namespace %s", key.Name, key.Namespace)
			}
			return fmt.Errorf("get bundle %s: %w", key, err)
		}
		patch := client.MergeFromWithOptions(b.DeepCopy(), client.MergeFromWithOptimisticLock{})
		b.Spec.ForceSyncGeneration++
		err := c.Patch(ctx, b, patch, client.FieldOwner(cliFieldManager))
		if !apierrors.IsConflict(err) {
			if err != nil {
				return fmt.Errorf("redeploy bundle %s: %w", key, err)
			}
			return nil
		}
	}
	return fmt.Errorf("redeploy bundle %s: it kept changing; try again", key)
}

// redeployGitRepo increments a GitRepo's spec.forceSyncGeneration (optimistic lock, as redeploy).
func redeployGitRepo(cmd *cobra.Command, c client.Client, key client.ObjectKey) error {
	for range 5 {
		gr := &fleetv1alpha1.GitRepo{}
		if err := c.Get(cmd.Context(), key, gr); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("gitrepo %q not found in namespace %s", key.Name, key.Namespace)
			}
			return fmt.Errorf("get gitrepo %s: %w", key, err)
		}
		patch := client.MergeFromWithOptions(gr.DeepCopy(), client.MergeFromWithOptimisticLock{})
		gr.Spec.ForceSyncGeneration++
		err := c.Patch(cmd.Context(), gr, patch, client.FieldOwner(cliFieldManager))
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("redeploy gitrepo %s: %w", key, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "gitrepo.fleet.drover.io/%s redeploying (forceSyncGeneration %d): its Bundles are written again and %s\n",
			key.Name, gr.Spec.ForceSyncGeneration, redeployEffect)
		return nil
	}
	return fmt.Errorf("redeploy gitrepo %s: it kept changing; try again", key)
}
