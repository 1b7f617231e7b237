package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Tracker is a gauge of objects by state: each object (key, such as "namespace/name") counts
// once, or with the given weights, under the label values it was last set to, until it is
// deleted. A controller sets an object's state on every reconcile and deletes it when the object
// is gone, so the gauge is exact without listing anything at scrape time, and moving an object
// from one state to another never leaves a stale count behind.
type Tracker struct {
	desc   *prometheus.Desc
	labels int

	mu   sync.Mutex
	objs map[string]map[string]float64 // key -> joined label values -> value
}

const sep = "\xff"

// NewTracker returns a Tracker gauge named name with the given labels.
func NewTracker(name, help string, labels ...string) *Tracker {
	return &Tracker{desc: prometheus.NewDesc(name, help, labels, nil), labels: len(labels), objs: map[string]map[string]float64{}}
}

// Set counts key once under values (one value per label).
func (t *Tracker) Set(key string, values ...string) {
	t.SetWeights(key, map[string]float64{strings.Join(values, sep): 1})
}

// SetCounts counts key under several single-label values at once (for a Tracker with one
// label), e.g. a Bundle's BundleDeployments by state. Zero counts are dropped.
func (t *Tracker) SetCounts(key string, counts map[string]int) {
	w := map[string]float64{}
	for v, n := range counts {
		if n != 0 {
			w[v] = float64(n)
		}
	}
	t.SetWeights(key, w)
}

// SetWeights replaces key's contributions (joined label values to value).
func (t *Tracker) SetWeights(key string, w map[string]float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(w) == 0 {
		delete(t.objs, key)
		return
	}
	t.objs[key] = w
}

// Delete stops counting key.
func (t *Tracker) Delete(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.objs, key)
}

// Describe implements prometheus.Collector.
func (t *Tracker) Describe(ch chan<- *prometheus.Desc) { ch <- t.desc }

// Collect implements prometheus.Collector: one sample per label values with objects.
func (t *Tracker) Collect(ch chan<- prometheus.Metric) {
	sums := map[string]float64{}
	t.mu.Lock()
	for _, w := range t.objs {
		for lv, v := range w {
			sums[lv] += v
		}
	}
	t.mu.Unlock()
	for lv, v := range sums {
		values := strings.Split(lv, sep)
		if len(values) != t.labels {
			continue // a programming error: wrong number of label values
		}
		ch <- prometheus.MustNewConstMetric(t.desc, prometheus.GaugeValue, v, values...)
	}
}
