package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	t.Chdir(t.TempDir())
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		io.WriteString(w, "ok\n")
	}))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	t.Setenv("SANDPIPER_HTTP_ADDR", ":"+port)
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"healthcheck"}, nil, &stdout, &stderr); code != 0 || stdout.String() != "ok http://127.0.0.1:"+port+"/healthz\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, &stdout, &stderr)
	}
	status = http.StatusServiceUnavailable
	stderr.Reset()
	if code := run(t.Context(), []string{"healthcheck", srv.URL + "/healthz"}, nil, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "503 Service Unavailable") {
		t.Errorf("unhealthy: exit %d, stderr %q", code, &stderr)
	}
	t.Setenv("SANDPIPER_HTTP_ADDR", "")
	if code := run(t.Context(), []string{"healthcheck"}, nil, &stdout, &stderr); code != 1 {
		t.Errorf("no HTTP server: exit %d", code)
	}
}
