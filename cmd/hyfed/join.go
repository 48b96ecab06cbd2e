package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/model"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/session"
	"github.com/hyfed/hyfed/shared/table"
)

func runJoin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	link, args := linkFirst(args)
	fs := newFlags("join", stderr)
	data := fs.String("data", "", "this participant's data: its own CSV file, read against the federation's schema (a federation created with --schema), or a block file hyfed partition wrote")
	delim := fs.String("delimiter", "", "the CSV file's delimiter: comma, semicolon or tab (default: found from the header line)")
	retry := fs.Duration("retry-for", 2*time.Minute, "keep trying to reach the server this long before giving up")
	quiet := fs.Bool("quiet", false, "no progress lines")
	modelPath := fs.String("model", "", modelUsage+" (fetched from the server when training ends)")
	statePath := fs.String("state", "", "keep this participant's seat (its session token) and, with threshold keys, its party of the key "+
		"(a committee member's share, sealed under the link secret) in this file, written (0600) whenever they change and read at start: "+
		"a join killed and started again with the same --state takes part again as the same participant. Default: none (a restarted join registers afresh, "+
		"which a started federation refuses)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if link == "" {
		return errors.New("usage: hyfed join '<join link>' --data FILE [--state FILE]")
	}
	l, err := session.ParseLink(link)
	if err != nil {
		return err
	}
	var state *joinState
	if *statePath != "" {
		if state, err = loadJoinState(*statePath, l); err != nil {
			return err
		}
		// Written now, so that an unwritable path stops the join before
		// it takes a seat it could not come back to.
		if err := state.save(*statePath); err != nil {
			return err
		}
	} else if l.Threshold() && !*quiet {
		fmt.Fprintln(stderr, "threshold keys: without --state FILE, a join that is stopped cannot come back with its share of the key")
	}
	if *data == "" {
		return errors.New("--data: give this participant's file")
	}
	d, err := table.ParseDelimiter(*delim)
	if err != nil {
		return fmt.Errorf("--delimiter: %w", err)
	}
	raw, err := os.ReadFile(*data)
	if err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	// The schema the file is read against is the federation's.
	var st server.Status
	if err := getJSON(ctx, l.StatusURL(), l.Invite, &st); err != nil {
		return err
	}
	b, mapping, err := table.Load(*data, raw, st.Config.Schema, table.Options{Delimiter: d})
	if err != nil {
		return err
	}
	if mapping != nil {
		fmt.Fprint(stderr, mapping.String())
	}
	fmt.Fprintf(stderr, "%s: %d samples, %d features; joining %s\n", *data, b.N(), len(b.Features), l.Base)
	o := session.Options{Dial: session.WebSocket(64 << 20), RetryFor: *retry,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if !*quiet {
		o.OnWelcome = func(_, name string) { fmt.Fprintf(stderr, "registered as %s\n", name) }
		last := time.Time{}
		o.OnMessage = func(m *protocol.Message) {
			if m.Kind == protocol.KindWeights && time.Since(last) > 2*time.Second {
				last = time.Now()
				fmt.Fprintf(stderr, "round %d\n", m.Round)
			}
		}
	}
	if state != nil {
		o.Session, o.KeyState = state.Session, state.KeyState
		if state.Session != "" {
			fmt.Fprintf(stderr, "returning to the seat kept in %s%s\n", *statePath, map[bool]string{true: ", with its share of the threshold key", false: ""}[state.KeyState != nil])
		}
		// A state that cannot be written is said, not fatal: the
		// federation needs this participant more than its restart does.
		keep := func() {
			if err := state.save(*statePath); err != nil {
				fmt.Fprintf(stderr, "warning: %v (a restarted join would not take part again as this participant)\n", err)
			}
		}
		welcome := o.OnWelcome
		o.OnWelcome = func(token, name string) {
			if token != state.Session {
				state.Session = token
				keep()
			}
			if welcome != nil {
				welcome(token, name)
			}
		}
		o.OnKeyState = func(ks []byte) {
			state.KeyState = ks
			keep()
		}
	}
	res, err := session.Run(ctx, l, b, o)
	if err != nil {
		return err
	}
	if *modelPath != "" {
		m, info, err := fetchModel(ctx, l, l.Invite)
		if err != nil {
			return fmt.Errorf("--model: %w", err)
		}
		if err := model.WriteFiles(*modelPath, m, info); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "model: %s and %s\n", *modelPath, model.SidecarPath(*modelPath))
	}
	if err := printJSON(stdout, map[string]any{"name": res.Name, "rounds": res.Rounds, "reconnects": res.Reconnects,
		"bytes_sent": res.BytesSent, "bytes_received": res.BytesRecv}); err != nil {
		return err
	}
	return learned(ctx, l, stderr)
}

// learned fails a participant's run whose federation handed out nothing
// learned (its model is round 0), and says what went wrong in training.
func learned(ctx context.Context, l session.Link, stderr io.Writer) error {
	var st server.Status
	if err := getJSON(ctx, l.StatusURL(), l.Invite, &st); err != nil {
		return err
	}
	for _, w := range st.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if st.Model == nil || st.Model.Round == 0 {
		return errors.New("the federation's model is its starting point (round 0): training learned nothing")
	}
	if b := float64(st.Model.Bound); st.State == "finished" && !math.IsNaN(b) {
		how := "its last round"
		if st.Converged {
			how = "its tolerance"
		}
		fmt.Fprintf(stderr, "finished at round %d (%s): the model (round %d) is certified within %.2g %% of the optimal objective\n", st.Round, how, st.Model.Round, 100*b)
	}
	return nil
}
