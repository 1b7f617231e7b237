package cli

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchTimeout, when set, asks the API server to end each watch after that many seconds (tests
// use it to see watches reopened); watchesOpened counts the watches opened.
var (
	watchTimeout  *int64
	watchesOpened atomic.Int64
)

// watchFlags are kubectl's watch flags of a list command.
type watchFlags struct {
	watch, only, events bool
}

func (w *watchFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&w.watch, "watch", "w", false, "after listing, print each object again when it is added, changed or deleted (Ctrl-C stops)")
	cmd.Flags().BoolVar(&w.only, "watch-only", false, "print only changes, without listing first")
	cmd.Flags().BoolVar(&w.events, "output-watch-events", false, "with --watch, prefix each change with ADDED, MODIFIED or DELETED (json, yaml: print {type, object} watch events)")
}

func (w *watchFlags) enabled() bool { return w.watch || w.only }

func (w *watchFlags) validate(o *output) error {
	if w.events && !w.enabled() {
		return usageErrorf("--output-watch-events needs --watch or --watch-only")
	}
	// json and yaml print each event as kubectl does, {"type": ..., "object": ...}; name and
	// jsonpath have no place for the type.
	switch o.format {
	case "", "table", "wide", "json", "yaml":
	default:
		if w.events {
			return usageErrorf("--output-watch-events: only with a table (-o table or wide), -o json or -o yaml, not -o %s", o.format)
		}
	}
	return nil
}

// listWatch is one list command's watch: what it lists and how it prints an object.
type listWatch[T client.Object] struct {
	c           client.WithWatch
	newList     func() client.ObjectList
	items       func(client.ObjectList) []T
	opts        []client.ListOption
	out, errOut io.Writer
	// none is the message for an empty first list ("No bundles found in drover-default.").
	none          string
	o             *output
	cols          []column[T]
	withNamespace bool
	events        bool
	// table prints the table formats' rows (made on the first): the first list as one table,
	// each change as a row lined up under it, as kubectl's watch rows are.
	table *table[T]
	// printer prints every object of a non-table format: one printer, so that YAML documents
	// get their "---" separators.
	printer printers.ResourcePrinter
}

// run prints the listed items (unless only), then every change from the list's resourceVersion
// until ctx ends, as kubectl get --watch does. A watch the server closes is reopened where it
// stopped; one whose resourceVersion is too old is listed again, so nothing is missed.
func (lw *listWatch[T]) run(ctx context.Context, only bool) error {
	rv, err := lw.list(ctx, !only)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		opts := append(append([]client.ListOption{}, lw.opts...),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: watchTimeout}})
		w, err := lw.c.Watch(ctx, lw.newList(), opts...)
		watchesOpened.Add(1)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				if rv, err = lw.list(ctx, true); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("watch: %w", err)
		}
		rv, err = lw.follow(ctx, w, rv)
		w.Stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// list lists the items, prints them if show, and returns the list's resourceVersion.
func (lw *listWatch[T]) list(ctx context.Context, show bool) (string, error) {
	l := lw.newList()
	if err := lw.c.List(ctx, l, lw.opts...); err != nil {
		return "", err
	}
	if show {
		items := lw.items(l)
		if err := sortList(items, lw.o.sortBy); err != nil {
			return "", err
		}
		if len(items) == 0 && (lw.table == nil || !lw.table.started) && (lw.o.format == "" || lw.o.format == "table" || lw.o.format == "wide") {
			fmt.Fprintf(lw.errOut, "No %s.\n", lw.none)
		}
		// One table, aligned as list prints it; the changes that follow are rows of their own.
		if err := lw.print(watch.Added, items...); err != nil {
			return "", err
		}
	}
	return l.GetResourceVersion(), nil
}

// follow prints w's events until it closes, returning the resourceVersion to resume from; ""
// after a 410 asks for a new list.
func (lw *listWatch[T]) follow(ctx context.Context, w watch.Interface, rv string) (string, error) {
	for {
		select {
		case <-ctx.Done():
			return rv, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv, nil
			}
			switch ev.Type {
			case watch.Error:
				if ctx.Err() != nil {
					return rv, nil // stopped (Ctrl-C): the stream's end is no error
				}
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return lw.list(ctx, true)
				}
				return rv, fmt.Errorf("watch: %w", err)
			case watch.Bookmark:
				if m, err := meta.Accessor(ev.Object); err == nil {
					rv = m.GetResourceVersion()
				}
			default:
				obj, ok := ev.Object.(T)
				if !ok {
					return rv, fmt.Errorf("watch: unexpected %T", ev.Object)
				}
				rv = obj.GetResourceVersion()
				if err := lw.print(ev.Type, obj); err != nil {
					return rv, err
				}
			}
		}
	}
}

// print prints objs: table rows (see table), or each object alone in the other formats.
func (lw *listWatch[T]) print(typ watch.EventType, objs ...T) error {
	switch lw.o.format {
	case "", "table", "wide":
	default:
		if lw.printer == nil {
			p, err := lw.o.printer()
			if err != nil {
				return err
			}
			lw.printer = p
		}
		for _, obj := range objs {
			if err := setKind(obj); err != nil {
				return err
			}
			clean(obj)
			var printed runtime.Object = obj
			if lw.events {
				printed = &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Object: obj}}
			}
			if err := lw.printer.PrintObj(printed, lw.out); err != nil {
				return err
			}
		}
		return nil
	}
	if lw.table == nil {
		lw.table = newTable(lw.o, lw.cols, lw.withNamespace, lw.events)
	}
	return lw.table.print(lw.out, typ, objs...)
}
