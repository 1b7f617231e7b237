package dashboard

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
)

// pageTemplate is a page's template set: the frame ("layout") and its "content".
type pageTemplate struct{ t *template.Template }

var pageNames = []string{"overview", "hosted", "cluster", "fleet", "bundles", "gitrepos", "migrations", "tokens", "login", "error"}

var funcs = template.FuncMap{
	"join":  strings.Join,
	"lower": strings.ToLower,
	"pathEscape": func(s string) string {
		return url.PathEscape(s)
	},
	"nsQuery": nsQuery,
	"nsLabel": func(ns string) string {
		if ns == "" {
			return "all namespaces"
		}
		return ns
	},
	"pct": func(n, total int) int {
		if total == 0 {
			return 0
		}
		return n * 100 / total
	},
	"add":        func(a, b int) int { return a + b },
	"filterLink": filterLink,
	"condClass":  condClass,
}

// nsQuery keeps the namespace selection on links.
func nsQuery(ns string) string {
	if ns == "" {
		return ""
	}
	return "?namespace=" + url.QueryEscape(ns)
}

// selected is a request's valid namespace selection, kept on the page an action returns to.
func selected(r *http.Request) string {
	if ns := r.URL.Query().Get("namespace"); validNamespace(ns) {
		return ns
	}
	return ""
}

func parseTemplates() (map[string]*pageTemplate, error) {
	base, err := template.New("").Funcs(funcs).ParseFS(assets, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("parse dashboard layout: %w", err)
	}
	out := map[string]*pageTemplate{}
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(assets, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse dashboard page %s: %w", name, err)
		}
		out[name] = &pageTemplate{t}
	}
	return out, nil
}

// view is what a template renders: the frame's data and the page's.
type view struct {
	L *layoutData
	D any
}

// render writes a page, or only its content region when the page asks for a live update
// (X-Drover-Fragment).
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, l *layoutData, d any) {
	if l == nil {
		l = &layoutData{Mode: h.mode()}
	}
	tmpl := "layout"
	if r.Header.Get("X-Drover-Fragment") != "" {
		tmpl = "content"
	}
	var buf bytes.Buffer
	start := time.Now()
	if err := h.pages[name].t.ExecuteTemplate(&buf, tmpl, view{L: l, D: d}); err != nil {
		ctrl.LoggerFrom(r.Context()).Error(err, "Render dashboard page", "page", name)
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Add("Server-Timing", fmt.Sprintf("render;dur=%.1f", float64(time.Since(start).Microseconds())/1000))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

type errorData struct {
	Status  int
	Text    string
	Message string
	// Detail is the underlying error, in small print, when Message says it plainly.
	Detail string
}

func (h *Handler) errorPage(w http.ResponseWriter, r *http.Request, l *layoutData, status int, err error) {
	if l == nil {
		l = &layoutData{Mode: h.mode()}
	}
	l.Title = http.StatusText(status)
	l.Watch = ""
	h.render(w, r, status, "error", l, errorData{Status: status, Text: http.StatusText(status), Message: err.Error()})
}

// msgUnreachable is what a page says when the management API server does not answer.
const msgUnreachable = "The management API server cannot be reached: the dashboard reads everything from it, with your identity. " +
	"Try again in a moment; if it lasts, check that the API server is running and that drover can reach it."

// readFailed answers a request whose reads failed: plainly, with 503, when the management API
// server did not answer (the error in small print), otherwise 502 with the error.
func (h *Handler) readFailed(w http.ResponseWriter, r *http.Request, l *layoutData, err error) {
	if !apiUnreachable(err) {
		h.errorPage(w, r, l, http.StatusBadGateway, err)
		return
	}
	if l == nil {
		l = &layoutData{Mode: h.mode()}
	}
	status := http.StatusServiceUnavailable
	l.Title, l.Watch = http.StatusText(status), ""
	h.render(w, r, status, "error", l, errorData{Status: status, Text: http.StatusText(status), Message: msgUnreachable, Detail: err.Error()})
}

// apiUnreachable reports whether err is the API server not answering (the connection failed
// or timed out, or it said it cannot serve), not an answer it gave.
func apiUnreachable(err error) bool {
	var ce *checkError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}
