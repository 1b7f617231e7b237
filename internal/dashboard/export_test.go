package dashboard

import (
	"io"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DecodeList decodes a JSON list of a kind (a watchKinds name) as the dashboard's lists do.
func DecodeList(r io.Reader, kind string) (map[string]client.Object, string, error) {
	return decodeList(r, watchKinds[kind])
}

// KindURL is where a kind is listed in a namespace.
func KindURL(kind, ns string) string { return watchKinds[kind].url(ns) }
