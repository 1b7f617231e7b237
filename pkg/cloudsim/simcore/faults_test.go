package simcore

import (
	"testing"
	"time"
)

func TestParseFaults(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    FaultConfig
		wantErr bool
	}{
		{name: "empty", in: ""},
		{name: "all keys", in: "throttle=0.3,5xx=0.1,drop=0.05,latency=20ms,seed=7,ops=A|B",
			want: FaultConfig{Throttle: 0.3, ServerError: 0.1, Drop: 0.05, Latency: 20 * time.Millisecond, Seed: 7, Operations: []string{"A", "B"}}},
		{name: "not key value", in: "throttle", wantErr: true},
		{name: "unknown key", in: "boom=1", wantErr: true},
		{name: "probability above one", in: "throttle=1.5", wantErr: true},
		{name: "sum above one", in: "throttle=0.6,5xx=0.6", wantErr: true},
		{name: "bad latency", in: "latency=soon", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFaults(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseFaults(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got.Throttle != tt.want.Throttle || got.ServerError != tt.want.ServerError || got.Drop != tt.want.Drop ||
				got.Latency != tt.want.Latency || got.Seed != tt.want.Seed || len(got.Operations) != len(tt.want.Operations) {
				t.Fatalf("ParseFaults(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestFaultsAreSeededAndProportional(t *testing.T) {
	draw := func() []Fault {
		f := NewFaults(FaultConfig{Throttle: 0.3, ServerError: 0.1, Seed: 42})
		out := make([]Fault, 10000)
		for i := range out {
			out[i], _ = f.Decide("Op")
		}
		return out
	}
	a, b := draw(), draw()
	counts := map[Fault]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d differs between runs with the same seed: %v vs %v", i, a[i], b[i])
		}
		counts[a[i]]++
	}
	if c := counts[FaultThrottle]; c < 2700 || c > 3300 {
		t.Errorf("throttled %d of 10000 calls, want about 3000", c)
	}
	if c := counts[FaultServerError]; c < 800 || c > 1200 {
		t.Errorf("5xx on %d of 10000 calls, want about 1000", c)
	}
}

func TestFaultsLimitedToOperations(t *testing.T) {
	f := NewFaults(FaultConfig{Throttle: 1, Operations: []string{"Describe"}})
	if got, _ := f.Decide("Create"); got != NoFault {
		t.Fatalf("Create got %v, want no fault", got)
	}
	if got, _ := f.Decide("Describe"); got != FaultThrottle {
		t.Fatalf("Describe got %v, want throttle", got)
	}
	var zero *Faults
	if got, _ := zero.Decide("Describe"); got != NoFault {
		t.Fatalf("nil Faults got %v, want no fault", got)
	}
}

func TestCounters(t *testing.T) {
	var c Counters
	c.Inc("A")
	c.Inc("A")
	c.Inc("B")
	if c.Get("A") != 2 || c.Get("B") != 1 || c.Total() != 3 {
		t.Fatalf("counts = %v", c.Snapshot())
	}
	c.Reset()
	if c.Total() != 0 {
		t.Fatalf("after reset counts = %v", c.Snapshot())
	}
}
