package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	processv1 "sigs.k8s.io/agent-sandbox/packages/sandboxd/spec/process/v1"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/internal/remote"
)

// pod is the runtime of one sandbox: agent-sandbox's sandboxd, reached at
// the pod's IP, its ProcessService over gRPC and its files over REST
// (/v1/files). The sandbox-router is not used: it proxies HTTP/1.1, and
// the ProcessService is HTTP/2.
type pod struct {
	rest string // http://ip:port
	http *http.Client
	conn *grpc.ClientConn
	proc processv1.ProcessServiceClient
}

// dial prepares the connections to the pod at ip; the first call
// connects.
func (s *Sandbox) dial(ip string) (*pod, error) {
	conn, err := grpc.NewClient(net.JoinHostPort(ip, strconv.Itoa(s.cfg.GRPCPort)),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithNoProxy(), // a pod IP, never through HTTPS_PROXY
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(remote.MaxManifest+maxCollectorStderr+1<<10)),
	)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: connect to the sandbox at %s: %w", ip, err)
	}
	return &pod{
		rest: "http://" + net.JoinHostPort(ip, strconv.Itoa(s.cfg.RESTPort)),
		http: &http.Client{Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: requestTimeout}).DialContext,
			ResponseHeaderTimeout: requestTimeout,
			MaxIdleConnsPerHost:   4,
		}},
		conn: conn,
		proc: processv1.NewProcessServiceClient(conn),
	}, nil
}

func (p *pod) close() {
	p.conn.Close()
	p.http.CloseIdleConnections()
}

// fileURL is the REST URL of name, a path relative to the sandbox's root
// (sandbox.WorkDir), each element escaped.
func (p *pod) fileURL(name string) string {
	parts := strings.Split(name, "/")
	for i, e := range parts {
		parts[i] = url.PathEscape(e)
	}
	return p.rest + "/v1/files/" + strings.Join(parts, "/")
}

// put writes a file (PUT /v1/files/{path}; parents are made).
func (p *pod) put(ctx context.Context, f sandbox.File) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, p.fileURL(f.Name), bytes.NewReader(f.Data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT %s: %s", f.Name, apiError(resp))
	}
	return nil
}

// read reads a file, at most max bytes: a [remote.ReadFile].
func (p *pod) read(ctx context.Context, name string, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.fileURL(name), nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, remote.ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", name, apiError(resp))
	case resp.ContentLength > max:
		return nil, remote.ErrTooBig
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", name, err)
	}
	if int64(len(data)) > max {
		return nil, remote.ErrTooBig
	}
	return data, nil
}

// apiError is the error a REST response carries ({"code", "message"}).
func apiError(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if msg := strings.TrimSpace(string(b)); msg != "" {
		return resp.Status + ": " + msg
	}
	return resp.Status
}

// exit is how the program's command ended: its exit code, or the error
// that ended its stream first.
type exit struct {
	code int
	err  error
}

// run is the program's command: started, streaming its output into
// stdout and stderr.
type run struct {
	pid  int32
	done chan exit // receives once, when the stream ends
	stop context.CancelFunc
}

// start starts cmd with env, and streams its output until it exits.
// Once the request is sent, the stream outlives ctx until run.stop:
// ending it first would have sandboxd kill the command's first process
// alone, before kill reaches its group. When ctx ends before the command
// has started, start waits up to killGrace for its InitEvent, so that
// the caller can kill it.
func (p *pod) start(ctx context.Context, cmd []string, env map[string]string, stdout, stderr io.Writer) (*run, error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	connecting := context.AfterFunc(ctx, cancel)
	stream, err := p.proc.Start(sctx, &processv1.StartRequest{Config: &processv1.ProcessConfig{Command: cmd, EnvVars: env}})
	if !connecting() || err != nil {
		cancel()
		if err == nil {
			err = context.Cause(ctx)
		}
		return nil, err
	}
	type recv struct {
		ev  *processv1.StartResponse
		err error
	}
	firstc := make(chan recv, 1)
	go func() {
		ev, err := stream.Recv()
		firstc <- recv{ev, err}
	}()
	var f recv
	select {
	case f = <-firstc:
	case <-ctx.Done():
		select {
		case f = <-firstc:
		case <-time.After(killGrace):
			cancel()
			return nil, context.Cause(ctx)
		}
	}
	first, err := f.ev, f.err
	if err != nil {
		cancel()
		return nil, err
	}
	init := first.GetInit()
	if init == nil {
		cancel()
		return nil, fmt.Errorf("the ProcessService's first event is %T, not its InitEvent", first.GetEvent())
	}
	r := &run{pid: init.GetProcessId(), done: make(chan exit, 1), stop: cancel}
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = errors.New("the ProcessService's stream ended without the program's exit")
				}
				r.done <- exit{err: err}
				return
			}
			switch e := ev.GetEvent().(type) {
			case *processv1.StartResponse_Stdout:
				stdout.Write(e.Stdout)
			case *processv1.StartResponse_Stderr:
				stderr.Write(e.Stderr)
			case *processv1.StartResponse_Exit:
				r.done <- exit{code: int(e.Exit.GetExitCode())}
				return
			}
		}
	}()
	return r, nil
}

// kill sends SIGKILL to the command's process group.
func (p *pod) kill(ctx context.Context, pid int32) error {
	ctx, cancel := context.WithTimeout(ctx, killGrace)
	defer cancel()
	_, err := p.proc.SendSignal(ctx, &processv1.SendSignalRequest{ProcessId: pid, Signal: processv1.Signal_SIGNAL_SIGKILL})
	return err
}

// maxCollectorStderr bounds what of the collector's stderr is kept.
const maxCollectorStderr = 4 << 10

// collect reads back the files the program created or changed: the
// collector lists them in the pod, and they are read over REST.
func (p *pod) collect(ctx context.Context, inputs []sandbox.File, lim sandbox.Limits) (files []sandbox.File, omitted []string, capped bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, collectTimeout)
	defer cancel()
	resp, err := p.proc.Execute(ctx, &processv1.ExecuteRequest{Config: &processv1.ProcessConfig{
		Command: append([]string{python}, remote.CollectorArgs(".", lim, inputs)...),
	}})
	if err != nil {
		return nil, nil, false, err
	}
	out := &sandbox.CapBuffer{Max: remote.MaxManifest}
	out.Write(resp.GetStdout())
	return remote.Files(ctx, out, int(resp.GetExitCode()), resp.GetStderr(), lim, p.read)
}

// Timeouts of the calls to a sandbox's runtime.
const (
	// requestTimeout bounds one file's transfer.
	requestTimeout = 30 * time.Second
	// collectTimeout bounds the listing and reading of the output files.
	collectTimeout = time.Minute
	// killGrace is how long a killed program may take to report its end.
	killGrace = 2 * time.Second
)
