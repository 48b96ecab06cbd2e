package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/labstack/echo/v4"
)

// DemoData supplies demo federations' blocks and their simulated
// participants. It lives outside the server (hyfed serve --demo keeps it):
// simulated participants hold the federation secret, which the
// coordinator never does.
type DemoData interface {
	// Files returns the blocks of demo federation id as the files a page
	// downloads and joins with, in block order: named CSV files in a
	// federation with a schema, else block files (nil: it has none in
	// this process, e.g. a demo federation from before a restart).
	Files(id string) []partition.File
	// Fill runs simulated native participants with the given blocks, in
	// that order, in the background.
	Fill(id string, blocks []int) error
	// Seat returns the demo block a registering participant holds (its
	// hello's pseudonyms are those of the block's records, which only the
	// secret's holder can tell), or -1.
	Seat(id string, hello *protocol.Message) int
}

// DemoBlock is one entry of GET /api/federations/:id/demo-blocks.
type DemoBlock struct {
	Block    int    `json:"block"`
	File     string `json:"file"` // its name: demo-block-<k>.csv, or .libsvm for a block file
	Samples  int    `json:"samples"`
	Features int    `json:"features"` // the features its columns give (a schema's intercept not counted)
	Taken    bool   `json:"taken"`    // a participant registered with it, or a simulated one was started for it
}

// demoBlocks checks for the invite or the admin token: a demo block is
// for whoever may join.
func (s *Server) demoBlocks(c echo.Context) (*federation, []partition.File, error) {
	f, err := s.record(c)
	if err != nil {
		return nil, nil, err
	}
	if r := f.authorize(bearer(c)).role; r != roleInvite && r != roleAdmin {
		return nil, nil, httpError(http.StatusUnauthorized, "bad-token", "demo blocks need the federation's invite (the join link carries it) or admin token (Authorization: Bearer ...)")
	}
	if err := s.load(c, f); err != nil {
		return nil, nil, err
	}
	if !f.meta.Demo {
		return nil, nil, httpError(http.StatusNotFound, "not-demo", "federation %q is not a demo federation: bring your own block file", f.meta.ID)
	}
	var blocks []partition.File
	if s.opt.Demo != nil {
		blocks = s.opt.Demo.Files(f.meta.ID)
	}
	if blocks == nil {
		return nil, nil, httpError(http.StatusNotFound, "not-demo", "this server holds no demo blocks for federation %q (it was created before the server restarted)", f.meta.ID)
	}
	return f, blocks, nil
}

// handleDemoList lists a demo federation's blocks.
func (s *Server) handleDemoList(c echo.Context) error {
	f, blocks, err := s.demoBlocks(c)
	if err != nil {
		return err
	}
	s.mu.Lock()
	taken := s.taken[f.meta.ID]
	s.mu.Unlock()
	out := make([]DemoBlock, len(blocks))
	for k, b := range blocks {
		out[k] = DemoBlock{Block: k, File: b.Name, Samples: b.Samples, Features: b.Features, Taken: taken[k]}
	}
	return c.JSON(http.StatusOK, out)
}

// handleDemoBlock hands demo block k to a page as its file: a named CSV
// file the page reads as the user's own, or a block file.
func (s *Server) handleDemoBlock(c echo.Context) error {
	_, blocks, err := s.demoBlocks(c)
	if err != nil {
		return err
	}
	k, err := strconv.Atoi(c.Param("k"))
	if err != nil || k < 0 || k >= len(blocks) {
		return httpError(http.StatusNotFound, "bad-field", "block %q: this demo has blocks 0 to %d", c.Param("k"), len(blocks)-1)
	}
	// Loading a block takes no seat: the seat is taken when a participant
	// registers with the block (register), so a page left without joining
	// leaves its block to "fill the free seats".
	f := blocks[k]
	ctype := "text/plain; charset=utf-8"
	if strings.HasSuffix(f.Name, ".csv") {
		ctype = "text/csv; charset=utf-8"
	}
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", f.Name))
	return c.Blob(http.StatusOK, ctype, f.Data)
}

// handleFill fills a demo federation's free seats with simulated
// participants: every block no page has taken.
func (s *Server) handleFill(c echo.Context) error {
	if _, err := s.adminOf(c, "filling the seats"); err != nil {
		return err
	}
	f, blocks, err := s.demoBlocks(c)
	if err != nil {
		return err
	}
	f.mu.Lock()
	started := f.coord.Started()
	f.mu.Unlock()
	if started {
		return httpError(http.StatusConflict, "started", "training has started: there are no free seats")
	}
	s.mu.Lock()
	if s.taken[f.meta.ID] == nil {
		s.taken[f.meta.ID] = map[int]bool{}
	}
	var free []int
	for k := range blocks {
		if !s.taken[f.meta.ID][k] {
			free = append(free, k)
			s.taken[f.meta.ID][k] = true
		}
	}
	s.mu.Unlock()
	if len(free) == 0 {
		return httpError(http.StatusConflict, "full", "every demo block is taken")
	}
	if err := s.opt.Demo.Fill(f.meta.ID, free); err != nil {
		s.mu.Lock()
		for _, k := range free {
			delete(s.taken[f.meta.ID], k)
		}
		s.mu.Unlock()
		return httpError(http.StatusInternalServerError, "fill", "simulated participants: %v", err)
	}
	s.log.Info("demo seats filled", "federation", f.meta.ID, "blocks", free)
	return c.JSON(http.StatusOK, map[string]any{"started": len(free), "blocks": free})
}

func (s *Server) take(id string, k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken[id] == nil {
		s.taken[id] = map[int]bool{}
	}
	s.taken[id][k] = true
}
