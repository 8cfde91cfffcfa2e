package fencing

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Client talks to a protected resource (Resource, or anything serving the
// same HTTP API). The zero HTTP uses http.DefaultClient. Its methods return a
// *StaleError for a 409 and an *APIError for other failures, which matches
// ErrNotFound, ErrVersionMismatch, ErrIdempotencyConflict, ErrTooLarge or
// ErrBadRequest with errors.Is according to the status. After any other
// error (no answer, or one that could not be read) a Put or Fence that was
// sent may still have been applied, so look before retrying, or send the Put
// WithIdempotencyKey and retry it with the same key.
type Client struct {
	BaseURL string
	HTTP    *http.Client
}

// APIError is an error answer of the resource other than 409.
type APIError struct {
	StatusCode int
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("fencing: resource answered %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// Unwrap maps the status to the package's sentinel errors.
func (e *APIError) Unwrap() error {
	switch e.StatusCode {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusPreconditionFailed:
		return ErrVersionMismatch
	case http.StatusUnprocessableEntity:
		return ErrIdempotencyConflict
	case http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case http.StatusBadRequest:
		return ErrBadRequest
	case http.StatusServiceUnavailable:
		return ErrClosed
	}
	return nil
}

// PutOption modifies one Put.
type PutOption func(*http.Request)

// IfMatch makes the write conditional on the key's current version
// (optimistic concurrency); 0 means the key must not exist yet.
func IfMatch(version uint64) PutOption {
	return func(r *http.Request) { r.Header.Set(HeaderIfMatch, strconv.FormatUint(version, 10)) }
}

// WithIdempotencyKey makes retries of the write safe: the resource applies it
// once and answers a retry with the first answer.
func WithIdempotencyKey(key string) PutOption {
	return func(r *http.Request) { r.Header.Set(HeaderIdempotencyKey, key) }
}

// Put writes value under key with the holder's token and scope.
func (c *Client) Put(ctx context.Context, key, value string, token Token, scope string, opts ...PutOption) (PutResult, error) {
	var res PutResult
	req, err := c.newRequest(ctx, http.MethodPut, "/v1/kv/"+url.PathEscape(key), strings.NewReader(value))
	if err != nil {
		return res, err
	}
	setFencing(req, token, scope)
	for _, o := range opts {
		o(req)
	}
	err = c.do(req, scope, token, &res)
	return res, err
}

// Get reads key; ErrNotFound (through *APIError) if it was never written.
func (c *Client) Get(ctx context.Context, key string) (Entry, error) {
	var e Entry
	req, err := c.newRequest(ctx, http.MethodGet, "/v1/kv/"+url.PathEscape(key), nil)
	if err != nil {
		return e, err
	}
	err = c.do(req, "", 0, &e)
	return e, err
}

// Fence raises the floor of scope to token without writing, so that no
// older token is admitted from now on.
func (c *Client) Fence(ctx context.Context, token Token, scope string) (FenceResult, error) {
	var f FenceResult
	req, err := c.newRequest(ctx, http.MethodPost, "/v1/fence", nil)
	if err != nil {
		return f, err
	}
	setFencing(req, token, scope)
	err = c.do(req, scope, token, &f)
	return f, err
}

// Log returns the accepted writes of scope (of every scope if empty) in
// order, and the count of rejected stale requests.
func (c *Client) Log(ctx context.Context, scope string) (LogResult, error) {
	var l LogResult
	path := "/v1/log"
	if scope != "" {
		path += "?scope=" + url.QueryEscape(scope)
	}
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return l, err
	}
	err = c.do(req, scope, 0, &l)
	return l, err
}

func setFencing(req *http.Request, token Token, scope string) {
	req.Header.Set(HeaderToken, token.String())
	req.Header.Set(HeaderScope, scope)
}

func (c *Client) newRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	base := strings.TrimRight(c.BaseURL, "/")
	if base == "" {
		return nil, fmt.Errorf("fencing: Client.BaseURL is empty")
	}
	return http.NewRequestWithContext(ctx, method, base+path, body)
}

func (c *Client) do(req *http.Request, scope string, token Token, out any) error {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 2*MaxValueSize+(1<<20)))
	if err != nil {
		return fmt.Errorf("fencing: read answer of %s %s: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("fencing: decode answer of %s %s: %w", req.Method, req.URL.Path, err)
		}
		return nil
	}
	var eb errorBody
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &eb) == nil && eb.Error != "" {
		msg = eb.Error
	}
	if resp.StatusCode == http.StatusConflict {
		se := &StaleError{Scope: scope, Token: token, Floor: eb.Floor}
		if eb.Scope != "" {
			se.Scope = eb.Scope
		}
		if eb.Token != 0 {
			se.Token = eb.Token
		}
		return se
	}
	if eb.Version != nil && resp.StatusCode == http.StatusPreconditionFailed {
		msg = fmt.Sprintf("%s (current version %d)", msg, *eb.Version)
	}
	return &APIError{StatusCode: resp.StatusCode, Message: msg}
}
