package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/droverhq/drover/internal/kubeevents"
)

// maxEvents is how many of an object's Events `get` shows, newest last.
const maxEvents = 10

// printEvents prints the newest Events about obj (by UID: a hosted and a fleet Cluster may share
// a name), as kubectl describe does; none, or no right to list Events, prints nothing.
func printEvents(ctx context.Context, w io.Writer, c client.Client, obj client.Object) error {
	var list corev1.EventList
	// Events are an extra: without the right to list them the object is still shown.
	if c.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{"involvedObject.uid": string(obj.GetUID())}) != nil ||
		len(list.Items) == 0 {
		return nil
	}
	evs := list.Items
	last := kubeevents.LastTime
	sort.SliceStable(evs, func(i, j int) bool { return last(&evs[i]).Before(last(&evs[j])) })
	if len(evs) > maxEvents {
		evs = evs[len(evs)-maxEvents:]
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nEvents:\nAGE\tTYPE\tREASON\tMESSAGE")
	for i := range evs {
		e := &evs[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", duration.HumanDuration(now().Sub(last(e))), e.Type, e.Reason, oneLine(e.Message))
	}
	return tw.Flush()
}

// withEvents is print followed by obj's Events: a get command's details, as kubectl describe
// shows them.
func withEvents(ctx context.Context, w io.Writer, c client.Client, obj client.Object, print func() error) func() error {
	return func() error {
		if err := print(); err != nil {
			return err
		}
		return printEvents(ctx, w, c, obj)
	}
}
