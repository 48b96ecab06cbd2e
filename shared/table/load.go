package table

import (
	"bytes"
	"fmt"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/schema"
)

// IsBlockFile reports whether data starts as a block file does (the
// magic line hyfed partition writes), after a byte-order mark.
func IsBlockFile(data []byte) bool {
	return bytes.HasPrefix(bytes.TrimPrefix(data, []byte("\ufeff")), []byte("# hyfed-block"))
}

// Load reads what a participant joins with: a block file, or in a
// federation with a schema (s not nil) the participant's own CSV file,
// whose mapping it returns (nil for a block file). The errors say which
// file the federation takes.
func Load(name string, data []byte, s *schema.Schema, o Options) (*partition.Block, *Mapping, error) {
	if len(data) == 0 {
		return nil, nil, fmt.Errorf("%s: the file is empty", name)
	}
	if IsBlockFile(data) {
		if s != nil {
			return nil, nil, fmt.Errorf("%s is a block file (hyfed partition), but this federation reads each participant's own CSV file against its schema: join with your own file", name)
		}
		b, err := partition.ReadBlock(bytes.NewReader(data), name)
		return b, nil, err
	}
	if s == nil {
		return nil, nil, fmt.Errorf("%s is not a block file, and this federation has no schema to read a CSV file of your own against: its organizer creates one with hyfed create --schema (docs/own-data.md), or joins everyone with block files written by hyfed partition", name)
	}
	t, err := Read(bytes.NewReader(data), name, s, o)
	if err != nil {
		return nil, nil, err
	}
	b, err := t.Block(s)
	if err != nil {
		return nil, nil, err
	}
	return b, &t.Mapping, nil
}
