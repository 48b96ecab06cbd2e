// Package web holds the pages hyfed serve shows, embedded in the binary.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var files embed.FS

// Static is the folder of pages, scripts and styles.
func Static() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the folder is embedded: cannot fail
	}
	return sub
}
