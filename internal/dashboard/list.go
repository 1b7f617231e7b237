package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// table, when set, lists the kind as a server-side Table (see tableSpec).
	table *tableSpec
}

// tableSpec: a kind listed as a server-side Table without the objects (includeObject=None),
// its printer columns carrying what the pages show. For 3,000 BundleDeployments that is a
// tenth of the bytes of the JSON list (450 KiB, not 4.2 MiB: the metadata, managed fields
// included, which the API server always sends, is most of the JSON) and about a third of the
// API server's CPU (it evaluates every column's JSONPath for every row, about 2.5 µs a cell).
// The watch still delivers whole objects; trim makes them the same as a row's.
type tableSpec struct {
	// columns are the printer columns read, by name. A Table lacking one (an older CRD) makes
	// the list fall back to JSON.
	columns []string
	// object makes a row's object from its cells, in the order of columns (nil: null, absent or
	// not a string).
	object func(cells []*string) client.Object
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
//
// A kind with a tableSpec is listed as a Table, and as JSON only if the API server cannot
// give the Table with its columns.
func listStream(ctx context.Context, rc rest.Interface, k kindSpec, ns, field string) (map[string]client.Object, string, error) {
	if k.table != nil {
		objects, rv, err := listTable(ctx, rc, k, ns, field)
		if !errors.Is(err, errNoTable) {
			return objects, rv, err
		}
	}
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
	err := readObject(dec, "a list", func(name string) error {
		switch name {
		case "metadata":
			return readResourceVersion(dec, &rv)
		case "items":
			return readArray(dec, func() error {
				o := k.item()
				if err := jsonv2.UnmarshalDecode(dec, o, opts); err != nil {
					return err
				}
				objects[objectKey(o)] = trim(o)
				return nil
			})
		}
		return dec.SkipValue()
	})
	if err != nil {
		return nil, "", fmt.Errorf("decode the list of %s: %w", k.resource, err)
	}
	return objects, rv, nil
}

// readObject reads a JSON object from dec (what names it in errors), handing each member's
// name to member, which must read (or skip) the member's value.
func readObject(dec *jsontext.Decoder, what string, member func(name string) error) error {
	if tok, err := dec.ReadToken(); err != nil {
		return err
	} else if tok.Kind() != '{' {
		return fmt.Errorf("%s is a JSON object, not %v", what, tok.Kind())
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := member(name.String()); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// readArray reads a JSON array (or null) from dec, calling each to read every element.
func readArray(dec *jsontext.Decoder, each func() error) error {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return err
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != ']' {
		if err := each(); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// readResourceVersion reads a list's (or Table's) metadata, keeping its resourceVersion.
func readResourceVersion(dec *jsontext.Decoder, rv *string) error {
	var lm struct {
		ResourceVersion string `json:"resourceVersion"`
	}
	if err := jsonv2.UnmarshalDecode(dec, &lm, listOptions); err != nil {
		return err
	}
	*rv = lm.ResourceVersion
	return nil
}

// tableAccept asks for a list as a Table.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// errNoTable: the API server does not give the kind's list as a Table with the columns read.
var errNoTable = errors.New("no table with the expected columns")

// listTable lists a kind with the viewer's credential as a Table without the objects, decoded
// while the API server streams it.
func listTable(ctx context.Context, rc rest.Interface, k kindSpec, ns, field string) (map[string]client.Object, string, error) {
	req := rc.Get().AbsPath(k.url(ns)).SetHeader("Accept", tableAccept).Param("includeObject", string(metav1.IncludeNone))
	if field != "" {
		req = req.Param("fieldSelector", field)
	}
	body, err := req.Stream(ctx)
	switch {
	case apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err):
		return nil, "", fmt.Errorf("%w: %w", errNoTable, err)
	case err != nil:
		return nil, "", err
	}
	defer func() { _ = body.Close() }()
	return decodeTable(body, k)
}

// decodeTable decodes a Table of the kind (k.table): its rows' objects by namespace/name, and
// its resourceVersion. Cells are found by column name.
func decodeTable(r io.Reader, k kindSpec) (map[string]client.Object, string, error) {
	dec := jsontext.NewDecoder(r, listOptions)
	objects := map[string]client.Object{}
	rv := ""
	// at[i] is the index in k.table.columns of the Table's column i (-1: not read).
	var at []int
	err := readObject(dec, "a table", func(name string) error {
		switch name {
		case "metadata":
			return readResourceVersion(dec, &rv)
		case "columnDefinitions":
			var defs []metav1.TableColumnDefinition
			if err := jsonv2.UnmarshalDecode(dec, &defs, listOptions); err != nil {
				return err
			}
			at = make([]int, len(defs))
			found := make([]bool, len(k.table.columns))
			for i, d := range defs {
				at[i] = slices.Index(k.table.columns, d.Name)
				if at[i] >= 0 {
					found[at[i]] = true
				}
			}
			if i := slices.Index(found, false); i >= 0 {
				return fmt.Errorf("%w: no column %q", errNoTable, k.table.columns[i])
			}
			return nil
		case "rows":
			if at == nil {
				return fmt.Errorf("%w: rows before the column definitions", errNoTable)
			}
			return readArray(dec, func() error {
				cells, err := readRow(dec, at, len(k.table.columns))
				if err != nil {
					return err
				}
				o := k.table.object(cells)
				objects[objectKey(o)] = o
				return nil
			})
		}
		return dec.SkipValue()
	})
	if err != nil {
		return nil, "", fmt.Errorf("decode the table of %s: %w", k.resource, err)
	}
	return objects, rv, nil
}

// readRow reads a Table row's cells: the string cells of the columns read (at), in their order.
func readRow(dec *jsontext.Decoder, at []int, n int) ([]*string, error) {
	cells := make([]*string, n)
	err := readObject(dec, "a row", func(name string) error {
		if name != "cells" || dec.PeekKind() != '[' {
			return dec.SkipValue()
		}
		i := 0
		return readArray(dec, func() error {
			defer func() { i++ }()
			if i >= len(at) || at[i] < 0 || dec.PeekKind() != '"' {
				return dec.SkipValue()
			}
			tok, err := dec.ReadToken()
			if err != nil {
				return err
			}
			s := tok.String()
			cells[at[i]] = &s
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return cells, nil
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
