package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// completeNames completes the names of objects of list's kind in the namespace the command
// would use (-n, the context's, else def), leaving out names already given.
func completeNames(k *kubeOptions, def string, list client.ObjectList) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, ns, err := k.client(def)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
		defer cancel()
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var names []string
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			if m, err := meta.Accessor(o); err == nil && strings.HasPrefix(m.GetName(), toComplete) && !slices.Contains(args, m.GetName()) {
				names = append(names, m.GetName())
			}
			return nil
		})
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeOneName is completeNames for commands that take a single NAME.
func completeOneName(k *kubeOptions, def string, list client.ObjectList) cobra.CompletionFunc {
	all := completeNames(k, def, list)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return all(cmd, args, toComplete)
	}
}
