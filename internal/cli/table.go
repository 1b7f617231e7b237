package cli

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// createdAt is when obj was created, for the AGE column. The API server sets creationTimestamp
// itself, so golden tests fix this instead, as they fix now.
var createdAt = func(obj metav1.Object) time.Time { return obj.GetCreationTimestamp().Time }

// age is kubectl's AGE cell: how long ago obj was created.
func age[T client.Object](obj T) string {
	t := createdAt(obj)
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now().Sub(t))
}

// labelsCell is kubectl's --show-labels cell: k=v,k=v sorted by key, <none> without labels.
func labelsCell[T client.Object](obj T) string {
	if s := labelString(obj.GetLabels()); s != "" {
		return s
	}
	return "<none>"
}

// Table layout, as cli-runtime's table printer (a tabwriter) lays tables out: each cell padded
// to the column's widest cell and 3 spaces more, a column at least 6 wide, the last cell
// unpadded.
const (
	cellPadding  = 3
	minCellWidth = 6
)

// table prints objects as rows of a kubectl table: the command's columns (wide ones with -o
// wide), AGE after the default ones, LABELS last with --show-labels, NAMESPACE first with -A and
// EVENT before it with --output-watch-events. It is the one renderer of list, get -o table and
// list -w: it keeps its columns' widths, so that rows printed later (watch events) line up
// under the first table, growing a column only when a later cell is wider.
type table[T client.Object] struct {
	cols          []column[T]
	withNamespace bool
	events        bool
	noHeaders     bool
	// started: the first rows (with their header, unless --no-headers) are printed.
	started bool
	widths  []int
}

// newTable is the table of cols for the output flags o.
func newTable[T client.Object](o *output, cols []column[T], withNamespace, events bool) *table[T] {
	wide := o.format == "wide"
	t := &table[T]{withNamespace: withNamespace, events: events, noHeaders: o.noHeaders}
	// AGE ends the default columns; the wide ones follow it, as in kubectl get -o wide.
	last := -1
	for i, c := range cols {
		if !c.wide {
			last = i
		}
	}
	labels := false
	for i, c := range cols {
		if !c.wide || wide {
			t.cols = append(t.cols, c)
			labels = labels || c.name == "LABELS"
		}
		if i == last {
			t.cols = append(t.cols, column[T]{name: "AGE", cell: age[T]})
		}
	}
	if o.showLabels && !labels {
		t.cols = append(t.cols, column[T]{name: "LABELS", cell: labelsCell[T]})
	}
	return t
}

// print prints objs as rows, after the header if these are the table's first rows (and
// --no-headers is not set); typ fills the EVENT column.
func (t *table[T]) print(out io.Writer, typ watch.EventType, objs ...T) error {
	if len(objs) == 0 {
		return nil
	}
	var rows [][]string
	if !t.started && !t.noHeaders {
		rows = append(rows, t.header())
	}
	t.started = true
	for _, obj := range objs {
		rows = append(rows, t.row(typ, obj))
	}
	if t.widths == nil && t.events {
		t.widths = []int{len(watch.Modified) + cellPadding} // room for every event type from the start
	}
	for _, r := range rows {
		for i, cell := range r {
			if i == len(t.widths) {
				t.widths = append(t.widths, 0)
			}
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(cell)+cellPadding, minCellWidth)
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, cell := range r {
			b.WriteString(cell)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(cell)))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(out, b.String())
	return err
}

func (t *table[T]) header() []string {
	var r []string
	if t.events {
		r = append(r, "EVENT")
	}
	if t.withNamespace {
		r = append(r, "NAMESPACE")
	}
	for _, c := range t.cols {
		r = append(r, c.name)
	}
	return r
}

// row is obj's cells, each kept on its one line (see oneLine).
func (t *table[T]) row(typ watch.EventType, obj T) []string {
	var r []string
	if t.events {
		r = append(r, string(typ))
	}
	if t.withNamespace {
		r = append(r, obj.GetNamespace())
	}
	for _, c := range t.cols {
		r = append(r, oneLine(c.cell(obj)))
	}
	return r
}

// relaxedPath is kubectl's relaxed JSONPath of --sort-by: name1.name2, .name1.name2,
// {name1.name2} or {.name1.name2}.
var relaxedPath = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// sortPath parses a --sort-by field as kubectl does.
func sortPath(field string) (*jsonpath.JSONPath, error) {
	m := relaxedPath.FindStringSubmatch(strings.TrimSpace(field))
	if m == nil {
		return nil, errors.New("not a field path: use .name1.name2 or {.name1.name2}, e.g. .metadata.creationTimestamp")
	}
	spec := m[1]
	if spec == "" {
		spec = m[2]
	}
	p := jsonpath.New("sort-by").AllowMissingKeys(true)
	if err := p.Parse("{." + spec + "}"); err != nil {
		return nil, fmt.Errorf("parse JSONPath: %w", err)
	}
	return p, nil
}

// sortList sorts items by namespace, then name, then (stably) by the field at the JSONPath
// sortBy, if set, as kubectl get --sort-by does: numbers by value, RFC 3339 timestamps by time,
// anything else by its text; objects without the field first. A field no item has is an error.
func sortList[T client.Object](items []T, sortBy string) error {
	sortByName(items)
	if sortBy == "" {
		return nil
	}
	p, err := sortPath(sortBy)
	if err != nil {
		return usageErrorf("--sort-by %s: %w", sortBy, err)
	}
	type keyed struct {
		item T
		key  sortKey
	}
	ks := make([]keyed, len(items))
	for i, it := range items {
		k, err := sortKeyOf(p, it)
		if err != nil {
			return fmt.Errorf("--sort-by %s: %s/%s: %w", sortBy, it.GetNamespace(), it.GetName(), err)
		}
		ks[i] = keyed{it, k}
	}
	// A path no item has is a mistyped path, not an order, as kubectl says.
	if len(ks) > 0 && !slices.ContainsFunc(ks, func(k keyed) bool { return !k.key.missing }) {
		return fmt.Errorf("--sort-by %s: couldn't find any field with path %q in the list: check it against an item's fields (-o yaml)", sortBy, sortBy)
	}
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].key.less(ks[j].key) })
	for i := range ks {
		items[i] = ks[i].item
	}
	return nil
}

// sortKey is the value of an object's --sort-by field.
type sortKey struct {
	missing bool
	isNum   bool
	num     float64
	isTime  bool
	at      time.Time
	text    string
}

func sortKeyOf(p *jsonpath.JSONPath, obj runtime.Object) (sortKey, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return sortKey{}, fmt.Errorf("convert: %w", err)
	}
	res, err := p.FindResults(u)
	if err != nil {
		return sortKey{}, fmt.Errorf("find field: %w", err)
	}
	if len(res) == 0 || len(res[0]) == 0 {
		return sortKey{missing: true}, nil
	}
	v := res[0][0]
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return sortKey{missing: true}, nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return sortKey{isNum: true, num: float64(v.Int()), text: strconv.FormatInt(v.Int(), 10)}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return sortKey{isNum: true, num: float64(v.Uint()), text: strconv.FormatUint(v.Uint(), 10)}, nil
	case reflect.Float32, reflect.Float64:
		return sortKey{isNum: true, num: v.Float(), text: strconv.FormatFloat(v.Float(), 'g', -1, 64)}, nil
	case reflect.String:
		if t, err := time.Parse(time.RFC3339, v.String()); err == nil {
			return sortKey{isTime: true, at: t, text: v.String()}, nil
		}
		return sortKey{text: v.String()}, nil
	}
	return sortKey{text: fmt.Sprint(v.Interface())}, nil
}

// less orders missing fields first, then numbers and times by value, then text.
func (a sortKey) less(b sortKey) bool {
	switch {
	case a.missing || b.missing:
		return a.missing && !b.missing
	case a.isNum && b.isNum:
		return a.num < b.num
	case a.isTime && b.isTime:
		return a.at.Before(b.at)
	}
	return a.text < b.text
}
