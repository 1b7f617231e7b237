package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDashboardCommand: drover dashboard serves on 127.0.0.1 as the kubeconfig's identity,
// prints a URL with the access key, and stops on Ctrl-C (context cancelled).
func TestDashboardCommand(t *testing.T) {
	t.Parallel()
	kubeconfig := mgmtKubeconfig(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		cmd := NewRootCommand()
		cmd.SetArgs([]string{"dashboard", "--kubeconfig", kubeconfig})
		cmd.SetOut(w)
		cmd.SetErr(w)
		done <- cmd.ExecuteContext(ctx)
		_ = w.Close()
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		re := regexp.MustCompile(`http://127\.0\.0\.1:\d+/login\?key=\S+`)
		for sc.Scan() {
			if m := re.FindString(sc.Text()); m != "" {
				urls <- m
			}
		}
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("drover dashboard exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("drover dashboard printed no URL")
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	base := url[:strings.Index(url, "/login")]
	resp, err := c.Get(base + "/hosted")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the access key: status %d, want 401", resp.StatusCode)
	}
	resp, err = c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Hosted clusters") {
		t.Fatalf("the printed URL: status %d: %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("drover dashboard: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("drover dashboard did not stop")
	}
}
