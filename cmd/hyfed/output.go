package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// printJSON prints a command's result v as one JSON line, the last of its
// stdout, for scripts to read.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
