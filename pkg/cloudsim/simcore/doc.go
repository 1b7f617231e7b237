// Package simcore holds the pieces shared by drover's cloud simulators: seeded fault injection,
// per-operation call counters and the clock that drives their state machines.
//
// State machines in the simulators are lazy: a resource records when its current transition ends
// and the transition is applied when the resource is next read. No goroutine or timer runs per
// resource, which is what lets one simulator hold tens of thousands of clusters.
package simcore
