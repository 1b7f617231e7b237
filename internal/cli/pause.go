package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/gitrepo"
)

// cliFieldManager is the field manager of the CLI's changes to existing objects.
const cliFieldManager = "drover-cli"

// pauseTarget is what `pause`/`resume` change on one kind.
type pauseTarget struct {
	kind, resource string
	newObj         func() client.Object
	list           client.ObjectList // for shell completion
	// patch is the merge patch setting paused.
	patch func(paused bool) map[string]any
	// path is the paused field in managedFields' notation, to tell who else sets it.
	path []string
	// effect is what pausing or resuming does, printed after the change.
	effect func(paused bool) string
	// paused reads the field.
	paused func(client.Object) bool
}

var bundlePause = pauseTarget{
	kind: "bundle", resource: "bundle.fleet.drover.io",
	newObj: func() client.Object { return &fleetv1alpha1.Bundle{} },
	list:   &fleetv1alpha1.BundleList{},
	patch: func(p bool) map[string]any {
		return map[string]any{"spec": map[string]any{"rollout": map[string]any{"paused": p}}}
	},
	path: []string{"f:spec", "f:rollout", "f:paused"},
	effect: func(p bool) string {
		if p {
			return "rollout paused: clusters keep the version they run; newly matching clusters still get the current one"
		}
		return "rollout resumed: out-of-date clusters are updated within maxUnavailable"
	},
	paused: func(o client.Object) bool { return o.(*fleetv1alpha1.Bundle).Spec.Rollout.Paused },
}

var gitRepoPause = pauseTarget{
	kind: "gitrepo", resource: "gitrepo.fleet.drover.io",
	newObj: func() client.Object { return &fleetv1alpha1.GitRepo{} },
	list:   &fleetv1alpha1.GitRepoList{},
	patch:  func(p bool) map[string]any { return map[string]any{"spec": map[string]any{"paused": p}} },
	path:   []string{"f:spec", "f:paused"},
	effect: func(p bool) string {
		if p {
			return "fetching paused: the Bundles of the last commit stay as they are"
		}
		return "fetching resumed: the next poll deploys the branch's newest commit"
	},
	paused: func(o client.Object) bool { return o.(*fleetv1alpha1.GitRepo).Spec.Paused },
}

func newPauseCommand(k *kubeOptions, t pauseTarget, paused bool, defaultNS, short, example string) *cobra.Command {
	use := "resume NAME..."
	if paused {
		use = "pause NAME..."
	}
	return &cobra.Command{
		Use: use, Short: short, Example: example, Args: cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(k, defaultNS, t.list),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := k.client(defaultNS)
			if err != nil {
				return err
			}
			return setPaused(cmd, c, ns, args, t, paused)
		},
	}
}

// setPaused patches each object's paused field with drover's CLI as field manager; names are
// NAME or TYPE/NAME (see objectNames), and one that fails does not stop the others (see
// forEachName). A Bundle whose paused field Git sets (its GitRepo's drover.yaml/fleet.yaml) is
// changed anyway, with a warning: the GitRepo sets it back on its next apply.
func setPaused(cmd *cobra.Command, c client.Client, ns string, args []string, t pauseTarget, paused bool) error {
	names, err := objectNames(t.newObj(), args)
	if err != nil {
		return err
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	patch, err := json.Marshal(t.patch(paused))
	if err != nil {
		return err
	}
	verb := "resumed"
	if paused {
		verb = "paused"
	}
	return forEachName(cmd, names, func(name string) error {
		obj := t.newObj()
		// Who sets the field now: the patch moves it to drover-cli.
		if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%s %q not found in namespace %s", t.kind, name, ns)
			}
			return fmt.Errorf("get %s %s/%s: %w", t.kind, ns, name, err)
		}
		if t.paused(obj) == paused {
			fmt.Fprintf(out, "%s/%s was already %s: nothing changed\n", t.resource, name, verb)
			return nil
		}
		owner := gitRepoOwner(obj)
		fromGit := owner != "" && setBy(obj, gitrepo.FieldOwner, t.path)
		if err := c.Patch(cmd.Context(), obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(cliFieldManager)); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%s %q not found in namespace %s", t.kind, name, ns)
			}
			return fmt.Errorf("%s %s %s/%s: %w", strings.TrimSuffix(verb, "d"), t.kind, ns, name, err)
		}
		fmt.Fprintf(out, "%s/%s %s: %s\n", t.resource, name, verb, t.effect(paused))
		if fromGit {
			fmt.Fprintf(errOut, "Warning: the paused setting of %s/%s comes from GitRepo %s (rollout.paused in its path's drover.yaml, or paused in fleet.yaml): its next apply sets it back; change it in Git (or pause the GitRepo: drover gitrepo pause %s)\n",
				t.resource, name, owner, owner)
		}
		return nil
	})
}

// gitRepoOwner is the name of the GitRepo whose object obj is (its owner reference, else the
// label the GitRepo controller sets on its Bundles), if any.
func gitRepoOwner(obj client.Object) string {
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == "GitRepo" && strings.HasPrefix(o.APIVersion, fleetv1alpha1.GroupVersion.Group+"/") {
			return o.Name
		}
	}
	return obj.GetLabels()[fleetv1alpha1.GitRepoNameLabel]
}

// setBy reports whether manager owns the field at path (managedFields' f: notation) of obj.
func setBy(obj client.Object, manager string, path []string) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != manager || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		found := true
		for _, p := range path {
			next, ok := fields[p].(map[string]any)
			if !ok {
				found = false
				break
			}
			fields = next
		}
		if found {
			return true
		}
	}
	return false
}
