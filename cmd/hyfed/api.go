package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
)

// joinLink completes the server's join path (which carries the invite
// after '#') with the secret, which only the organizer has, prefixed with
// the key mode of the federation req created ("plaintext:", "threshold:"),
// and says if the samples are aligned by OPRF pseudonyms.
func joinLink(base string, resp *server.CreateResponse, sec secret.Secret, req server.CreateRequest) string {
	scheme := req.Scheme
	if req.Keys == protocol.KeysThreshold {
		scheme = session.SchemeThreshold
	}
	link := strings.TrimRight(base, "/") + resp.JoinPath + "&secret=" + session.SecretPrefix(scheme) + sec.String()
	if req.Pseudonyms == protocol.PseudonymsOPRF {
		link += "&" + session.OPRFParam
	}
	return link
}

// postJSON posts in as JSON to a hyfed server's API with a bearer token
// (none if empty) and decodes the answer into out.
func postJSON(ctx context.Context, url, token string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return doJSON(req, out)
}

// getJSON gets a hyfed server's API resource into out, as postJSON.
func getJSON(ctx context.Context, url, token string, out any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return doJSON(req, out)
}

// doJSON sends req and decodes a 2xx answer into out; any other status
// becomes an error with the server's own message, which says what to fix.
func doJSON(req *http.Request, out any) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error, Code string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s %s: %s (%s)", req.Method, req.URL.Path, e.Error, resp.Status)
		}
		return fmt.Errorf("%s %s: %s", req.Method, req.URL.Path, resp.Status)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

// newCreateToken makes a server's create token.
func newCreateToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // no randomness: nothing sensible to do
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
