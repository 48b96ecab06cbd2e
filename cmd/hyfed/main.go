// Command hyfed trains one model across parties that each hold some samples
// and some features (hybrid federated learning) with HyFDCA.
//
//	hyfed experiment  run a whole federation in one process
//	hyfed central     train centrally (the optimum P* federated runs aim for)
//	hyfed partition   split a data set into one file per client
//	hyfed bench       time one round, split by phase
//	hyfed serve       run the server (federations, websockets, dashboard)
//	hyfed create      create a federation on a server, print its join link
//	hyfed join        take part with one block file
//	hyfed sim         run many native participants against a federation
//	hyfed predict     score a data set with a model file
//	hyfed data        fetch the built-in data sets; export one as LIBSVM
//	hyfed suite       the convergence suite (docs/convergence.md)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"experiment", "run a whole federation in one process (in-memory transport)", runExperiment},
	{"central", "train centrally with SDCA to a relative duality gap of 1e-9", runCentral},
	{"partition", "split a data set into one block file per client", runPartition},
	{"bench", "time rounds at Fashion-MNIST scale, split by phase", runBench},
	{"serve", "run the server: federations, participants' websockets, dashboard", runServe},
	{"create", "create a federation on a server and print its join link", runCreate},
	{"join", "take part in a federation with one block file", runJoin},
	{"sim", "run many native participants (one block each) against a federation", runSim},
	{"bench-net", "time rounds with many participants on loopback websockets (server in a child process)", runBenchNet},
	{"bench-abuse", "flood a hyfed serve (child process) with creations and unauthenticated hellos; print its memory", runBenchAbuse},
	{"compare", "HyFDCA against FedAvg, HyFEM and FedHybrid on the paper's grid, tuned; Markdown table and SVG plots", runCompare},
	{"predict", "score a data set with a model file (LIBLINEAR's format, as --model writes it); print its accuracy", runPredict},
	{"data", "fetch the built-in data sets for an installed hyfed (data fetch mnist); export one as LIBSVM (data export)", runData},
	{"suite", "the convergence suite: a fixed grid of in-process runs against central SDCA, written to a Markdown report", runSuite},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: hyfed <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\n'hyfed <command> -h' lists a command's flags.")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			if err != nil {
				fmt.Fprintf(stderr, "hyfed %s: %v\n", c.name, err)
				return 1
			}
			return 0
		}
	}
	fmt.Fprintf(stderr, "hyfed: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}
