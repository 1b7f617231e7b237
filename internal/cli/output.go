package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/droverhq/drover/internal/server"
)

// now is the clock of relative times ("3m ago"); golden tests fix it.
var now = time.Now

// outputFormats are the -o values of every read command.
const outputFormats = "table|wide|json|yaml|name|jsonpath=TEMPLATE"

// output is the -o flag of a read command, with a list command's table flags.
type output struct {
	format string
	// noHeaders, showLabels and sortBy are a list command's --no-headers, --show-labels and
	// --sort-by (see addListFlags); read commands of one object leave them unset.
	noHeaders, showLabels bool
	sortBy                string
}

func (o *output) addFlag(cmd *cobra.Command, human string) {
	usage := "output format: " + outputFormats
	if human != "" {
		usage += " (default: " + human + ")"
	}
	cmd.Flags().StringVarP(&o.format, "output", "o", "", usage)
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"table", "wide", "json", "yaml", "name", "jsonpath="}, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}

// addListFlags binds kubectl's table flags of a list command: --no-headers, --show-labels and
// --sort-by (which also orders -o json, yaml, name and jsonpath).
func (o *output) addListFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.noHeaders, "no-headers", false, "table output: print no header row")
	f.BoolVar(&o.showLabels, "show-labels", false, "table output: show each object's labels as the last column (LABELS)")
	f.StringVar(&o.sortBy, "sort-by", "", "sort the list by the field at this JSONPath, e.g. .metadata.creationTimestamp or '{.status.phase}' (default: namespace, then name)")
	_ = cmd.RegisterFlagCompletionFunc("sort-by", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{".metadata.name", ".metadata.namespace", ".metadata.creationTimestamp"}, cobra.ShellCompDirectiveNoFileComp
	})
}

// validate fails with a usage error on an unknown -o value or a --sort-by that is no JSONPath.
func (o *output) validate() error {
	if o.sortBy != "" {
		if _, err := sortPath(o.sortBy); err != nil {
			return usageErrorf("--sort-by %s: %w", o.sortBy, err)
		}
	}
	switch f := o.format; {
	case f == "", f == "table", f == "wide", f == "json", f == "yaml", f == "name":
		return nil
	case f == "jsonpath=", f == "jsonpath":
		return usageErrorf("-o %s needs a template, e.g. -o jsonpath='{.metadata.name}'", f)
	case strings.HasPrefix(f, "jsonpath="):
		if _, err := printers.NewJSONPathPrinter(strings.TrimPrefix(f, "jsonpath=")); err != nil {
			return usageErrorf("-o %s: %w", f, err)
		}
		return nil
	}
	return usageErrorf("-o %s: unknown output format (use %s)", o.format, outputFormats)
}

// column is one table column; wide columns show only with -o wide.
type column[T any] struct {
	name string
	wide bool
	cell func(T) string
}

// printList prints items in the chosen format, in --sort-by's order (see sortList). Table
// formats list namespaces with -A (withNamespace); an empty table says so on errOut, like kubectl.
func printList[T client.Object](out, errOut io.Writer, o *output, items []T, cols []column[T], withNamespace bool, what string) error {
	if err := sortList(items, o.sortBy); err != nil {
		return err
	}
	switch o.format {
	case "", "table", "wide":
		if len(items) == 0 {
			fmt.Fprintf(errOut, "No %s.\n", what)
			return nil
		}
		return printTable(out, o, items, cols, withNamespace)
	case "name":
		for _, it := range items {
			if err := printObject(out, o, it); err != nil {
				return err
			}
		}
		return nil
	}
	return printAsList(out, o, items)
}

// printAsList prints items, in their order, as one v1 List in a format of printer (json, yaml,
// jsonpath). An empty list has "items": [], as kubectl's, never null: `jq '.items[]'` and
// `{range .items[*]}` work on it.
func printAsList[T client.Object](out io.Writer, o *output, items []T) error {
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: []runtime.RawExtension{}}
	for _, it := range items {
		if err := setKind(it); err != nil {
			return err
		}
		clean(it)
		b, err := json.Marshal(it)
		if err != nil {
			return err
		}
		list.Items = append(list.Items, runtime.RawExtension{Raw: b})
	}
	p, err := o.printer()
	if err != nil {
		return err
	}
	return p.PrintObj(list, out)
}

// sortByName sorts items by namespace, then name.
func sortByName[T client.Object](items []T) {
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].GetNamespace() != items[j].GetNamespace() {
			return items[i].GetNamespace() < items[j].GetNamespace()
		}
		return items[i].GetName() < items[j].GetName()
	})
}

// printOne prints one object: the command's human view with no -o, else like printList.
func printOne[T client.Object](out io.Writer, o *output, obj T, cols []column[T], human func() error) error {
	switch o.format {
	case "":
		return human()
	case "table", "wide":
		return printTable(out, o, []T{obj}, cols, false)
	}
	return printObject(out, o, obj)
}

// getAll gets the objects called args (NAME or TYPE/NAME, see objectNames) in ns and prints them
// as kubectl get does: one alone as printOne; several in the order given, as one table, one List
// (json, yaml, jsonpath) or a line each (name), and with no -o each one's details in turn. A name
// that fails does not stop the others (see forEachName). what names the kind in messages
// ("bundle") and list is the command listing them ("drover bundle list"); human prints one
// object's details.
func getAll[T client.Object](cmd *cobra.Command, c client.Client, ns string, args []string, o *output, newObj func() T,
	cols []column[T], what, list string, human func(T) error) error {
	names, err := objectNames(newObj(), args)
	if err != nil {
		return err
	}
	var objs []T
	failed := forEachName(cmd, names, func(name string) error {
		obj := newObj()
		if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%s %q not found in namespace %s (see `%s -n %s`)", what, name, ns, list, ns)
			}
			return fmt.Errorf("get %s %s/%s: %w", what, ns, name, err)
		}
		objs = append(objs, obj)
		return nil
	})
	out := cmd.OutOrStdout()
	if err := printGot(out, o, objs, len(names) == 1, cols, human); err != nil {
		return err
	}
	return failed
}

// printGot prints the objects a get found (see getAll); one is printed alone if only one was
// asked for.
func printGot[T client.Object](out io.Writer, o *output, objs []T, one bool, cols []column[T], human func(T) error) error {
	if len(objs) == 0 {
		return nil
	}
	if one {
		return printOne(out, o, objs[0], cols, func() error { return human(objs[0]) })
	}
	switch o.format {
	case "":
		for i, obj := range objs {
			if i > 0 {
				fmt.Fprintln(out)
			}
			if err := human(obj); err != nil {
				return err
			}
		}
		return nil
	case "table", "wide":
		return printTable(out, o, objs, cols, false)
	case "name":
		for _, obj := range objs {
			if err := printObject(out, o, obj); err != nil {
				return err
			}
		}
		return nil
	}
	return printAsList(out, o, objs)
}

func printObject(out io.Writer, o *output, obj client.Object) error {
	if err := setKind(obj); err != nil {
		return err
	}
	clean(obj)
	p, err := o.printer()
	if err != nil {
		return err
	}
	return p.PrintObj(obj, out)
}

func (o *output) printer() (printers.ResourcePrinter, error) {
	switch f := o.format; {
	case f == "json":
		return &printers.JSONPrinter{}, nil
	case f == "yaml":
		return &printers.YAMLPrinter{}, nil
	case f == "name":
		return &printers.NamePrinter{}, nil
	case strings.HasPrefix(f, "jsonpath="):
		p, err := printers.NewJSONPathPrinter(strings.TrimPrefix(f, "jsonpath="))
		if err != nil {
			return nil, usageErrorf("-o %s: %w", f, err)
		}
		p.AllowMissingKeys(true)
		return p, nil
	}
	return nil, usageErrorf("-o %s: unknown output format (use %s)", o.format, outputFormats)
}

// printTable prints items as one table (see table).
func printTable[T client.Object](out io.Writer, o *output, items []T, cols []column[T], withNamespace bool) error {
	return newTable(o, cols, withNamespace, false).print(out, "", items...)
}

// setKind fills in apiVersion and kind, which typed clients leave empty.
func setKind(obj runtime.Object) error {
	gvk, err := apiutil.GVKForObject(obj, server.Scheme())
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// clean drops managedFields, as kubectl does by default.
func clean(obj runtime.Object) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
}

// ago is a kubectl-style relative time: "5m", "never".
func ago(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	return duration.HumanDuration(now().Sub(t.Time)) + " ago"
}

func condStatusOf(conds []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return "-"
}

// condStatusWhy is condStatusOf with the reason when the condition is not True
// ("False (AgentDisconnected)"), as kubectl's STATUS column says why a pod is not running.
func condStatusWhy(conds []metav1.Condition, t string) string {
	c := meta.FindStatusCondition(conds, t)
	switch {
	case c == nil:
		return "-"
	case c.Status != metav1.ConditionTrue && c.Reason != "":
		return string(c.Status) + " (" + c.Reason + ")"
	}
	return string(c.Status)
}

// newListCommand is the "list" command of one kind, the kubectl way: -o, -A, -l, the default
// namespace def; items takes the list's items, cols are the table columns and what names the
// kind in messages ("bundles").
func newListCommand[L any, PL interface {
	*L
	client.ObjectList
}, T client.Object](k *kubeOptions, short, example, def string, items func(PL) []T, cols []column[T], what string) *cobra.Command {
	var o output
	var w watchFlags
	cmd := &cobra.Command{
		Use: "list", Short: short, Example: example,
		// kubectl get NAME is habit: point at get, not at an "unknown command".
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				get := "get"
				if cmd.Parent() != nil && cmd.Parent().Name() == "bundle" {
					get = "status"
				}
				return usageErrorf("list takes no NAME (%q): show one with `%s %s %s`", args[0], cmd.Parent().CommandPath(), get, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			if err := w.validate(&o); err != nil {
				return err
			}
			c, ns, err := k.client(def)
			if err != nil {
				return err
			}
			opts, err := k.listOptions(ns)
			if err != nil {
				return err
			}
			if w.enabled() {
				lw := &listWatch[T]{c: c, none: emptyList(what, k.listNamespace(ns)), opts: opts, out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), o: &o, cols: cols,
					withNamespace: k.allNamespaces, events: w.events,
					newList: func() client.ObjectList { return PL(new(L)) },
					items:   func(l client.ObjectList) []T { return items(l.(PL)) }}
				if err := lw.run(cmd.Context(), w.only); err != nil {
					return fmt.Errorf("watch %s in %s: %w", what, orAll(k.listNamespace(ns)), err)
				}
				return nil
			}
			list := PL(new(L))
			if err := c.List(cmd.Context(), list, opts...); err != nil {
				return fmt.Errorf("list %s in %s: %w", what, orAll(k.listNamespace(ns)), err)
			}
			return printList(cmd.OutOrStdout(), cmd.ErrOrStderr(), &o, items(list), cols, k.allNamespaces, emptyList(what, k.listNamespace(ns)))
		},
	}
	o.addFlag(cmd, "table")
	o.addListFlags(cmd)
	k.addListFlags(cmd)
	w.addFlags(cmd)
	return cmd
}

// ptrs are pointers to the elements of items.
func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// emptyList says a list found nothing, and where else to look when it looked in one namespace.
func emptyList(what, ns string) string {
	if ns == "" {
		return what + " found in all namespaces"
	}
	return what + " found in namespace " + ns + " (every namespace: -A)"
}
