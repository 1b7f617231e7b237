package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/hosted"
)

// waitPoll is how often a wait re-reads the object.
var waitPoll = 2 * time.Second

// waitFlags are --wait and --timeout of commands that start work.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) add(cmd *cobra.Command, until string, def time.Duration) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait until "+until+", printing each phase change; exit 3 if it fails or --timeout passes")
	cmd.Flags().DurationVar(&w.timeout, "timeout", def, "how long --wait waits")
}

// state is one observation of the object being waited for.
type state struct {
	// line is printed when it changes (phase changes).
	line string
	done bool
	// failed ends the wait with exit 3.
	failed error
}

// waitUntil polls check until it reports done, a failure, or the timeout (exit 3 for both).
func waitUntil(ctx context.Context, out io.Writer, what string, timeout time.Duration, check func(context.Context) (state, error)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	start, last := time.Now(), ""
	tick := time.NewTicker(waitPoll)
	defer tick.Stop()
	for {
		s, err := check(ctx)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err == nil {
			if s.line != last {
				fmt.Fprintf(out, "%s: %s (%s)\n", what, s.line, time.Since(start).Round(time.Second))
				last = s.line
			}
			if s.failed != nil {
				return withCode(ExitNotReady, fmt.Errorf("%s failed: %w", what, s.failed))
			}
			if s.done {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			// Ctrl-C stops the wait only: what the command asked for was sent and goes on.
			return fmt.Errorf("stopped waiting for %s after %s (last: %s): the request was made and goes on; follow it with get or -w: %w",
				what, time.Since(start).Round(time.Second), orDash(last), ctx.Err())
		case <-deadline.C:
			return withCode(ExitNotReady, fmt.Errorf("timed out after %s waiting for %s (last: %s)", timeout, what, orDash(last)))
		case <-tick.C:
		}
	}
}

// clusterActive waits for a hosted cluster to be active; phase failed ends the wait.
func clusterActive(c client.Client, key client.ObjectKey) func(context.Context) (state, error) {
	return func(ctx context.Context) (state, error) {
		cl := &v1.Cluster{}
		if err := c.Get(ctx, key, cl); err != nil {
			return state{}, err
		}
		s := state{line: "phase " + orDash(string(cl.Status.Phase))}
		if r := meta.FindStatusCondition(cl.Status.Conditions, hosted.CondReady); r != nil && r.Message != "" {
			s.line += ": " + r.Message
		} else if cl.Status.Phase == "" {
			s.line = "waiting for drover server to take it up (drover check says whether it runs)"
		}
		switch cl.Status.Phase {
		case v1.PhaseActive:
			s.done = true
		case v1.PhaseFailed:
			s.failed = errors.New(orDash(cl.Status.FailureMessage))
		}
		// Credentials or a config drover cannot use wait for a person, not for time: say so
		// now rather than at --timeout. The cluster stays, and drover goes on once it is fixed.
		for _, t := range []string{hosted.CondCredentials, hosted.CondConfigValid} {
			if cond := meta.FindStatusCondition(cl.Status.Conditions, t); !s.done && s.failed == nil && cond != nil && cond.Status == metav1.ConditionFalse {
				s.failed = fmt.Errorf("%s %s: %s (the cluster is kept and drover goes on once this is fixed; follow it with: drover cluster list -w -n %s)",
					t, cond.Reason, oneLine(cond.Message), key.Namespace)
			}
		}
		return s, nil
	}
}

// gone waits for obj to be deleted.
func gone(c client.Client, obj client.Object) func(context.Context) (state, error) {
	return func(ctx context.Context) (state, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return state{line: "deleted", done: true}, nil
		}
		if err != nil {
			return state{}, err
		}
		if cl, ok := obj.(*v1.Cluster); ok {
			s := state{line: "phase " + orDash(string(cl.Status.Phase))}
			// A delete that needs credentials drover lacks waits for a person, as a create does.
			if cond := meta.FindStatusCondition(cl.Status.Conditions, hosted.CondCredentials); cl.Status.Phase == v1.PhaseDeleting && cond != nil && cond.Status == metav1.ConditionFalse {
				s.failed = fmt.Errorf("%s %s: %s (the delete is pending and goes on once this is fixed; follow it with: drover cluster list -w -n %s)",
					hosted.CondCredentials, cond.Reason, oneLine(cond.Message), cl.Namespace)
			}
			return s, nil
		}
		return state{line: "deleting"}, nil
	}
}

// bundleReady waits for a Bundle's current generation to be ready on every targeted cluster.
func bundleReady(c client.Client, key client.ObjectKey) func(context.Context) (state, error) {
	return func(ctx context.Context) (state, error) {
		b := &fleetv1alpha1.Bundle{}
		if err := c.Get(ctx, key, b); err != nil {
			return state{}, err
		}
		s := b.Status.Summary
		if b.Status.ObservedGeneration != b.Generation {
			return state{line: "waiting for the controller"}, nil
		}
		r := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionReady)
		bar := progressBar(s.Ready, s.DesiredReady, 20)
		if s.DesiredReady == 0 {
			bar = progressBar(0, 1, 20) // no cluster targeted is no progress
		}
		st := state{
			line: fmt.Sprintf("%s %d/%d clusters ready, %d pending, %d not ready, %d errored", bar, s.Ready, s.DesiredReady, s.Pending, s.NotReady+s.Modified, s.ErrApplied),
			done: r != nil && r.Status == "True" && r.ObservedGeneration == b.Generation,
		}
		if err := applyFailed(b); err != nil {
			st.failed = err
		}
		if st.done && s.DesiredReady == 0 {
			// Ready on no cluster is a mistyped --cluster or a selector matching nothing, not
			// a deployment.
			st.done, st.failed = false, fmt.Errorf("the Bundle targets no registered cluster: check its --cluster/--selector targets against the names and labels `drover fleet list -n %s -o wide` shows", key.Namespace)
		}
		return st, nil
	}
}

// deleteFlags are a delete command's --wait, --timeout and --ignore-not-found.
type deleteFlags struct {
	w              waitFlags
	ignoreNotFound bool
}

func (d *deleteFlags) add(cmd *cobra.Command, until string, def time.Duration) {
	d.w.add(cmd, until, def)
	cmd.Flags().BoolVar(&d.ignoreNotFound, "ignore-not-found", false, "treat a name that does not exist as deleted (exit 0), as kubectl delete --ignore-not-found")
}

// deleteAll deletes the objects called args (NAME or TYPE/NAME, see objectNames) in ns (newObj
// makes an empty one of the kind), prints kubectl's "<resource>/<name> deleted" for each and,
// with --wait, waits until every one is gone. As kubectl, a name that fails does not stop the
// others (see forEachName). kind names the kind in messages ("bundle").
func deleteAll(cmd *cobra.Command, c client.Client, ns string, args []string, kind, resource string,
	newObj func() client.Object, d deleteFlags, opts ...client.DeleteOption) error {
	names, err := objectNames(newObj(), args)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	var deleted []client.Object
	failed := forEachName(cmd, names, func(name string) error {
		obj := newObj()
		obj.SetNamespace(ns)
		obj.SetName(name)
		if err := c.Delete(cmd.Context(), obj, opts...); err != nil {
			if apierrors.IsNotFound(err) {
				if d.ignoreNotFound {
					return nil
				}
				return fmt.Errorf("%s %q not found in namespace %s (pass --ignore-not-found to treat that as deleted)", kind, name, ns)
			}
			return fmt.Errorf("delete %s %s/%s: %w", kind, ns, name, err)
		}
		fmt.Fprintf(out, "%s/%s deleted\n", resource, name)
		deleted = append(deleted, obj)
		return nil
	})
	if !d.w.wait {
		return failed
	}
	for _, obj := range deleted {
		if err := waitUntil(cmd.Context(), out, kind+" "+ns+"/"+obj.GetName(), d.w.timeout, gone(c, obj)); err != nil {
			return err
		}
	}
	return failed
}

// applyFailed is a Bundle's failure to apply once nothing is in progress: every targeted cluster
// has reported on its current version (none pending or out of date) and some failed to apply it.
// The agents keep retrying, but a --wait that waited for them would wait for a fix, not for
// time. nil while anything is in progress or nothing failed.
func applyFailed(b *fleetv1alpha1.Bundle) error {
	s := b.Status.Summary
	if b.Status.ObservedGeneration != b.Generation || s.ErrApplied == 0 || s.Pending > 0 || s.OutOfDate > 0 {
		return nil
	}
	msg := ""
	for _, c := range s.NonReadyClusters {
		if c.State == bundle.StateErrApplied {
			msg = ": " + c.Name + ": " + oneLine(c.Message)
			break
		}
	}
	return fmt.Errorf("%d of %d clusters failed to apply it%s (see drover bundle status %s -n %s)", s.ErrApplied, s.DesiredReady, msg, b.Name, b.Namespace)
}
