package simcore

import (
	"fmt"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FaultConfig describes which faults a simulator injects. Probabilities are in [0, 1] and are
// drawn from a generator seeded with Seed, so a run with the same seed and the same sequence of
// calls injects the same faults.
type FaultConfig struct {
	// Throttle is the probability that a call is answered with the provider's throttling error.
	Throttle float64
	// ServerError is the probability that a call is answered with a 5xx error.
	ServerError float64
	// Drop is the probability that the connection is closed without an answer.
	Drop float64
	// Latency is added to every call (before any other fault is applied).
	Latency time.Duration
	// Operations limits the faults to these operation names; empty means every operation.
	Operations []string
	// Seed seeds the generator; 0 means 1.
	Seed int64
}

// Fault is the outcome of one fault draw.
type Fault int

const (
	// NoFault means the call proceeds normally.
	NoFault Fault = iota
	// FaultThrottle means the call must be answered with the provider's throttling error.
	FaultThrottle
	// FaultServerError means the call must be answered with a 5xx error.
	FaultServerError
	// FaultDrop means the connection must be dropped without an answer (see DropConnection).
	FaultDrop
)

func (f Fault) String() string {
	switch f {
	case FaultThrottle:
		return "throttle"
	case FaultServerError:
		return "5xx"
	case FaultDrop:
		return "drop"
	default:
		return "none"
	}
}

// Faults draws faults for calls. The zero value injects nothing; it is safe for concurrent use.
type Faults struct {
	mu  sync.Mutex
	cfg FaultConfig
	rng *rand.Rand
	ops map[string]bool
}

// NewFaults returns a Faults configured with cfg.
func NewFaults(cfg FaultConfig) *Faults {
	f := &Faults{}
	f.Set(cfg)
	return f
}

// Set replaces the configuration and reseeds the generator.
func (f *Faults) Set(cfg FaultConfig) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg = cfg
	seed := cfg.Seed
	if seed == 0 {
		seed = 1
	}
	f.rng = rand.New(rand.NewSource(seed)) //nolint:gosec // reproducible fault injection, not security
	f.ops = nil
	if len(cfg.Operations) > 0 {
		f.ops = make(map[string]bool, len(cfg.Operations))
		for _, op := range cfg.Operations {
			f.ops[op] = true
		}
	}
}

// Config returns the current configuration.
func (f *Faults) Config() FaultConfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cfg
}

// Decide draws the fault for one call of operation op and returns it with the latency to add.
func (f *Faults) Decide(op string) (Fault, time.Duration) {
	if f == nil {
		return NoFault, 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng == nil || (f.ops != nil && !f.ops[op]) {
		return NoFault, 0
	}
	lat := f.cfg.Latency
	if f.cfg.Throttle == 0 && f.cfg.ServerError == 0 && f.cfg.Drop == 0 {
		return NoFault, lat
	}
	r := f.rng.Float64()
	switch {
	case r < f.cfg.Throttle:
		return FaultThrottle, lat
	case r < f.cfg.Throttle+f.cfg.ServerError:
		return FaultServerError, lat
	case r < f.cfg.Throttle+f.cfg.ServerError+f.cfg.Drop:
		return FaultDrop, lat
	}
	return NoFault, lat
}

// ParseFaults parses the --faults flag syntax: a comma-separated list of key=value with keys
// throttle, 5xx, drop (probabilities), latency (a Go duration), seed (an integer) and ops
// (operation names separated by '|'). Example: "throttle=0.3,latency=20ms,seed=7".
func ParseFaults(s string) (FaultConfig, error) {
	var cfg FaultConfig
	s = strings.TrimSpace(s)
	if s == "" {
		return cfg, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return cfg, fmt.Errorf("faults: %q is not key=value (keys: throttle, 5xx, drop, latency, seed, ops)", kv)
		}
		var err error
		switch k {
		case "throttle":
			cfg.Throttle, err = parseProb(k, v)
		case "5xx":
			cfg.ServerError, err = parseProb(k, v)
		case "drop":
			cfg.Drop, err = parseProb(k, v)
		case "latency":
			cfg.Latency, err = time.ParseDuration(v)
			if err != nil {
				err = fmt.Errorf("faults: latency %q is not a duration such as 20ms", v)
			}
		case "seed":
			cfg.Seed, err = strconv.ParseInt(v, 10, 64)
			if err != nil {
				err = fmt.Errorf("faults: seed %q is not an integer", v)
			}
		case "ops":
			cfg.Operations = strings.Split(v, "|")
		default:
			err = fmt.Errorf("faults: unknown key %q (keys: throttle, 5xx, drop, latency, seed, ops)", k)
		}
		if err != nil {
			return cfg, err
		}
	}
	if sum := cfg.Throttle + cfg.ServerError + cfg.Drop; sum > 1 {
		return cfg, fmt.Errorf("faults: throttle+5xx+drop = %g, must be at most 1", sum)
	}
	return cfg, nil
}

func parseProb(k, v string) (float64, error) {
	p, err := strconv.ParseFloat(v, 64)
	if err != nil || p < 0 || p > 1 {
		return 0, fmt.Errorf("faults: %s=%q must be a probability between 0 and 1", k, v)
	}
	return p, nil
}

// DropConnection closes the client's connection without writing a response.
func DropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	// Not hijackable (HTTP/2): abort the handler, which resets the stream.
	panic(http.ErrAbortHandler)
}
