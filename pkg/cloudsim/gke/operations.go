package gke

import (
	"bytes"
	"net/http"
)

// opVisible reports whether an operation named in a request is in the requested project and
// location ("-" matches every location when listing).
func opVisible(op *opRec, project, location string) bool {
	return op.project == project && (location == "-" || op.o.Location == location)
}

// refresh brings an operation up to date by advancing its cluster.
func (s *Server) refresh(op *opRec) {
	if rec := op.cluster; rec.op == op {
		s.advance(rec, s.clock.Now())
	}
}

func handleGetOperation(s *Server, _ *http.Request, rt *route) ([]byte, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := s.ops[rt.operation]
	if op == nil || !opVisible(op, rt.project, rt.location) || rt.location == "-" {
		return nil, notFound(rt.resource())
	}
	s.refresh(op)
	return mustJSON(op.o), nil
}

func handleListOperations(s *Server, _ *http.Request, rt *route) ([]byte, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.projects[rt.project]
	if ps == nil {
		return []byte("{}"), nil
	}
	var buf bytes.Buffer
	n := 0
	for _, op := range ps.ops {
		if !opVisible(op, rt.project, rt.location) {
			continue
		}
		s.refresh(op)
		if n == 0 {
			buf.WriteString(`{"operations":[`)
		} else {
			buf.WriteByte(',')
		}
		buf.Write(mustJSON(op.o))
		n++
	}
	if n == 0 {
		return []byte("{}"), nil
	}
	buf.WriteString("]}")
	return buf.Bytes(), nil
}
