package sidecar

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// HealthConfig ties leadership to the application's health: the sidecar
// asks URL every Interval (GET; a 2xx answer within Interval is healthy).
// After Failures unhealthy answers in a row the application is unhealthy:
// a leader resigns (a standby takes over at once), and the sidecar does not
// campaign again until an answer is healthy. It does not campaign before
// the first healthy answer either: an application that is not up does not
// lead.
type HealthConfig struct {
	URL      string
	Interval time.Duration // default 1s
	Failures int           // default 3
}

func (h HealthConfig) withDefaults() HealthConfig {
	if h.Interval <= 0 {
		h.Interval = time.Second
	}
	if h.Failures <= 0 {
		h.Failures = 3
	}
	return h
}

// AppStatus is the application's health as the sidecar last judged it
// (GET /v1/status, with a health URL).
type AppStatus struct {
	URL     string `json:"url"`
	Healthy bool   `json:"healthy"`
	Reason  string `json:"reason,omitempty"` // why not healthy
}

// appHealth is the health gate's state: healthy is closed while the
// application is healthy and replaced when it turns unhealthy.
type appHealth struct {
	mu      sync.Mutex
	known   bool // a verdict was reached
	ok      bool
	healthy chan struct{} // closed while ok
	reason  string
}

func newAppHealth() *appHealth { return &appHealth{healthy: make(chan struct{})} }

// set records a verdict and reports whether it is news: the first one, or
// a change.
func (a *appHealth) set(ok bool, reason string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reason = reason
	news := !a.known || ok != a.ok
	a.known = true
	if ok != a.ok {
		a.ok = ok
		if ok {
			close(a.healthy)
		} else {
			a.healthy = make(chan struct{})
		}
	}
	return news
}

// status is the last verdict, for url.
func (a *appHealth) status(url string) AppStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := AppStatus{URL: url, Healthy: a.ok, Reason: a.reason}
	if !a.known {
		st.Reason = "no healthy answer yet"
	}
	return st
}

// wait returns a channel closed once the application is healthy.
func (a *appHealth) wait() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.healthy
}

// checkHealth asks the application until ctx ends, and resigns a
// leadership while the application is unhealthy.
func (s *Sidecar) checkHealth(ctx context.Context) {
	h := s.cfg.Health
	client := &http.Client{Timeout: h.Interval}
	defer client.CloseIdleConnections()
	failures := 0
	t := time.NewTicker(h.Interval)
	defer t.Stop()
	for {
		err := probeApp(ctx, client, h.URL)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			failures = 0
			if s.health.set(true, "") {
				s.cfg.Logger.Info("application healthy", "url", h.URL)
			}
		default:
			failures++
			if failures >= h.Failures {
				reason := fmt.Sprintf("application unhealthy: %v (%d times in a row)", err, failures)
				if s.health.set(false, reason) {
					s.cfg.Logger.Warn("application unhealthy: not leading until it answers 2xx", "url", h.URL, "err", err)
				}
				s.resignUnhealthy(ctx, reason)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// resignUnhealthy resigns the leadership, if this instance leads.
func (s *Sidecar) resignUnhealthy(ctx context.Context, reason string) {
	s.mu.Lock()
	leading := s.leading != nil
	s.mu.Unlock()
	if !leading {
		return
	}
	s.cfg.Logger.Warn("resigning", "reason", reason)
	rctx, cancel := context.WithTimeout(ctx, s.cfg.TTL+5*time.Second)
	defer cancel()
	if err := s.Resign(rctx, reason); err != nil && ctx.Err() == nil {
		s.cfg.Logger.Warn("resign", "err", err)
	}
}

func probeApp(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// waitHealthy blocks a campaign until the application is healthy; false
// when ctx or the session ended meanwhile. Without a health URL it returns
// at once.
func (s *Sidecar) waitHealthy(ctx context.Context, done <-chan struct{}) bool {
	if s.cfg.Health.URL == "" {
		return true
	}
	select {
	case <-s.health.wait():
		return true
	case <-ctx.Done():
		return false
	case <-done:
		return false
	}
}
