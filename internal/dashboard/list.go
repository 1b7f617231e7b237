package dashboard

import (
	"context"
	"fmt"
	"io"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kindSpec is a kind the dashboard lists and watches.
type kindSpec struct {
	// path is the API path of the kind's group and version; resource its plural name.
	path, resource string
	// list is its list type, for the watch; item makes an empty object to decode one into.
	list func() client.ObjectList
	item func() client.Object
	// skipManifests: the kind's raw manifests ([]runtime.RawExtension) are not decoded; no page
	// shows them (a BundleDeployment's inline manifests can be most of its size).
	skipManifests bool
}

func kindOf[T, L any, PT interface {
	*T
	client.Object
}, PL interface {
	*L
	client.ObjectList
}](gv schema.GroupVersion, resource string) kindSpec {
	path := "/apis/" + gv.String()
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	return kindSpec{path: path, resource: resource,
		list: func() client.ObjectList { return PL(new(L)) }, item: func() client.Object { return PT(new(T)) }}
}

// url is where the kind is listed in a namespace ("" all).
func (k kindSpec) url(ns string) string {
	if ns == "" {
		return k.path + "/" + k.resource
	}
	return k.path + "/namespaces/" + ns + "/" + k.resource
}

// listStream lists a kind with the viewer's credential as JSON and decodes the items while the
// API server streams them: a list of thousands of objects is decoded once, item by item, into
// the typed objects, without holding the whole response or parsing it twice (the generic
// client reads the whole body, parses it to find its kind, then decodes it), and without the
// managed fields, which no page shows.
func listStream(ctx context.Context, rc rest.Interface, k kindSpec, ns, field string) (map[string]client.Object, string, error) {
	req := rc.Get().AbsPath(k.url(ns)).SetHeader("Accept", "application/json")
	if field != "" {
		req = req.Param("fieldSelector", field)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, "", err
	}
	defer func() { _ = body.Close() }()
	return decodeList(body, k)
}

// decodeList decodes a JSON list of the kind: its objects by namespace/name, trimmed, and its
// resourceVersion.
func decodeList(r io.Reader, k kindSpec) (map[string]client.Object, string, error) {
	opts := listOptions
	if k.skipManifests {
		opts = listOptionsNoManifests
	}
	dec := jsontext.NewDecoder(r, opts)
	objects := map[string]client.Object{}
	rv := ""
	fail := func(err error) (map[string]client.Object, string, error) {
		return nil, "", fmt.Errorf("decode the list of %s: %w", k.resource, err)
	}
	if tok, err := dec.ReadToken(); err != nil {
		return fail(err)
	} else if tok.Kind() != '{' {
		return fail(fmt.Errorf("a list is a JSON object, not %v", tok.Kind()))
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return fail(err)
		}
		switch name.String() {
		case "metadata":
			var lm struct {
				ResourceVersion string `json:"resourceVersion"`
			}
			if err := jsonv2.UnmarshalDecode(dec, &lm, opts); err != nil {
				return fail(err)
			}
			rv = lm.ResourceVersion
		case "items":
			if dec.PeekKind() == 'n' {
				if _, err := dec.ReadToken(); err != nil {
					return fail(err)
				}
				continue
			}
			if _, err := dec.ReadToken(); err != nil {
				return fail(err)
			}
			for dec.PeekKind() != ']' {
				o := k.item()
				if err := jsonv2.UnmarshalDecode(dec, o, opts); err != nil {
					return fail(err)
				}
				objects[objectKey(o)] = trim(o)
			}
			if _, err := dec.ReadToken(); err != nil {
				return fail(err)
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return fail(err)
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return fail(err)
	}
	return objects, rv, nil
}

// The decoding options: Kubernetes' JSON rules (case-sensitive names, as sigs.k8s.io/json; the
// API server's output taken as it is), managed fields skipped, and timestamps parsed directly
// (metav1.Time's UnmarshalJSON parses each one with encoding/json first).
var (
	skipManagedFields = jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, _ *[]metav1.ManagedFieldsEntry) error {
		return dec.SkipValue()
	})
	skipManifests = jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, _ *[]runtime.RawExtension) error {
		return dec.SkipValue()
	})
	fastTime = jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, t *metav1.Time) error {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		switch tok.Kind() {
		case 'n':
			t.Time = time.Time{}
			return nil
		case '"':
			pt, err := time.Parse(time.RFC3339, tok.String())
			if err != nil {
				return err
			}
			t.Time = pt.Local()
			return nil
		}
		return fmt.Errorf("a time is a JSON string, not %v", tok.Kind())
	})
	listOptions = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true),
		jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(skipManagedFields, fastTime)))
	listOptionsNoManifests = jsonv2.JoinOptions(listOptions,
		jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(skipManagedFields, fastTime, skipManifests)))
)
