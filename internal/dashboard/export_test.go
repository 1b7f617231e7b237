package dashboard

import (
	"context"
	"io"
	"slices"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DecodeList decodes a JSON list of a kind (a watchKinds name) as the dashboard's lists do.
func DecodeList(r io.Reader, kind string) (map[string]client.Object, string, error) {
	return decodeList(r, watchKinds[kind])
}

// KindURL is where a kind is listed in a namespace.
func KindURL(kind, ns string) string { return watchKinds[kind].url(ns) }

// DecodeTable decodes a Table of a kind (a watchKinds name) as the dashboard's lists do.
func DecodeTable(r io.Reader, kind string) (map[string]client.Object, string, error) {
	return decodeTable(r, watchKinds[kind])
}

// Trim is what the dashboard keeps of an object it lists or watches.
func Trim(o client.Object) client.Object { return trim(o) }

// TableAccept is the Accept header of a list as a Table.
const TableAccept = tableAccept

// ListWithColumn lists a kind as the dashboard's cache does, as if its Table also needed the
// column extra (an older CRD lacks some of the columns the dashboard reads).
func ListWithColumn(ctx context.Context, rc rest.Interface, kind, ns, extra string) (map[string]client.Object, string, error) {
	k := watchKinds[kind]
	t := *k.table
	t.columns = append(slices.Clone(t.columns), extra)
	k.table = &t
	return listStream(ctx, rc, k, ns, "")
}

// SafeNext is the redirect target kept after sign-in.
func SafeNext(next string) string { return safeNext(next) }
