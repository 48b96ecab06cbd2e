package server

import (
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/web"
)

// paperNotation is what a visitor without the papers cannot read (issue
// 17): references to sections and the papers' symbols.
var paperNotation = []string{"papers/", "sec. ", "hat_w", "dw_k", "X_k^T", "x<sub>n</sub>", "a<sub>n</sub>", "ŵ"}

func hasNotation(s string) string {
	for _, n := range paperNotation {
		if strings.Contains(s, n) {
			return n
		}
	}
	return ""
}

// The pages, their scripts and the server's user-facing strings say things
// in words: no section references, no paper symbols.
func TestPagesSayItInWords(t *testing.T) {
	static := web.Static()
	err := fs.WalkDir(static, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, "vendor/") || strings.HasPrefix(p, "wasm/") {
			return err
		}
		if ext := path.Ext(p); ext != ".html" && ext != ".js" {
			return nil
		}
		b, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			// JSON field names (p.hat_w) are code, not words.
			line = strings.ReplaceAll(line, ".hat_w", "")
			if n := hasNotation(line); n != "" {
				t.Errorf("%s:%d has %q: %s", p, i+1, n, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(append([]string{attackName}, alsoPlaintext...), alsoPlaintextSealedPrimal...) {
		if n := hasNotation(s); n != "" {
			t.Errorf("server string has %q: %s", n, s)
		}
	}
}
