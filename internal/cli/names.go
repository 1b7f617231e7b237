package cli

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/droverhq/drover/internal/crds"
	"github.com/droverhq/drover/internal/server"
)

// shortNames are the CRDs' shortNames (config/crd), which kubectl accepts as TYPE too, read
// from the embedded CRDs so that they cannot drift from them.
var shortNames = sync.OnceValue(func() map[schema.GroupKind][]string {
	out := map[schema.GroupKind][]string{}
	list, err := crds.Load()
	if err != nil {
		return out // embedded at build time: cannot fail in a built binary
	}
	for _, crd := range list {
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		out[gk] = append(out[gk], crd.Spec.Names.ShortNames...)
	}
	return out
})

// objectNames is the names in args, each NAME or TYPE/NAME as `-o name` prints them
// (bundle.fleet.drover.io/web), so that what one command prints another takes, as with kubectl.
// TYPE is obj's kind in any of kubectl's forms: plural, singular, kind or short name, alone or
// with .group or .version.group, in any case. Another TYPE is a usage error naming it: a
// fleet Cluster's name given to a hosted-cluster command is a mistake, not a name.
func objectNames(obj client.Object, args []string) ([]string, error) {
	gvk, err := apiutil.GVKForObject(obj, server.Scheme())
	if err != nil {
		return nil, err
	}
	singular := strings.ToLower(gvk.Kind)
	resource := singular + "." + gvk.Group // what -o name prints
	types := map[string]bool{}
	for _, t := range append([]string{singular, singular + "s"}, shortNames()[gvk.GroupKind()]...) {
		types[t], types[t+"."+gvk.Group], types[t+"."+gvk.Version+"."+gvk.Group] = true, true, true
	}
	names := make([]string, 0, len(args))
	for _, a := range args {
		typ, name, ok := strings.Cut(a, "/")
		if !ok {
			names = append(names, a)
			continue
		}
		if !types[strings.ToLower(typ)] {
			return nil, usageErrorf("%q: %s is not a %s: pass NAME or %s/NAME (%s is another kind of object: use its own command)", a, typ, gvk.Kind, resource, typ)
		}
		if name == "" || strings.Contains(name, "/") {
			return nil, usageErrorf("%q: not NAME or TYPE/NAME: pass e.g. %s/NAME", a, resource)
		}
		names = append(names, name)
	}
	return names, nil
}

// forEachName does do for every name, as kubectl does with several names: a failure is printed
// on stderr and the others are still done; the command then fails (exit 1) with the failures,
// already printed. The failure of a single name is the command's error, printed as any other.
// A cancelled command (Ctrl-C) stops at once.
func forEachName(cmd *cobra.Command, names []string, do func(name string) error) error {
	if len(names) == 1 {
		return do(names[0])
	}
	var errs []error
	for _, name := range names {
		err := do(name)
		if err == nil {
			continue
		}
		if cmd.Context().Err() != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "Error: %v\n", err)
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	return &exitError{code: ExitError, err: errors.Join(errs...), quiet: true}
}
