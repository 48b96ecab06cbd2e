// Command hyfed trains one model across parties that each hold some samples
// and some features (hybrid federated learning) with HyFDCA.
//
// For participants and organizers:
//
//	serve       run the server: federations, participants' websockets, dashboard
//	create      create a federation on a server and print its join link
//	join        take part in a federation with one data file (CSV or block file)
//	sim         run many native participants (one block each) against a federation
//	predict     score a data set with a model file (LIBLINEAR's); print its accuracy
//	data        fetch the built-in data sets; export one as LIBSVM (data fetch|export)
//	partition   split a data set into one block file per client
//
// For researchers:
//
//	experiment  run a whole federation in one process (in-memory transport)
//	central     train centrally with SDCA to a relative duality gap of 1e-9
//	suite       the convergence suite: a fixed grid of runs against central SDCA
//	compare     HyFDCA against FedAvg, HyFEM and FedHybrid on the paper's grid
//
// Benchmarks:
//
//	bench       time rounds at Fashion-MNIST scale, split by phase
//	bench-net   time rounds of many participants on loopback websockets
//	bench-abuse flood a server with creations, hellos, and registered participants' big frames and reconnects
//
// 'hyfed <command> -h' lists a command's flags.
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

// group is who a command is for: hyfed -h lists the commands by it, in
// the order of groupTitles, so that a participant finds join before the
// benchmarks.
type group int

const (
	forParticipants group = iota
	forResearchers
	forBenchmarks
)

var groupTitles = []string{"For participants and organizers", "For researchers", "Benchmarks"}

type command struct {
	name, summary string
	group         group
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands is the command table, by group; the package doc lists it the
// same way (TestPackageDocListsCommands).
var commands = []command{
	{"serve", "run the server: federations, participants' websockets, dashboard", forParticipants, runServe},
	{"create", "create a federation on a server and print its join link", forParticipants, runCreate},
	{"join", "take part in a federation with one data file (CSV or block file)", forParticipants, runJoin},
	{"sim", "run many native participants (one block each) against a federation", forParticipants, runSim},
	{"predict", "score a data set with a model file (LIBLINEAR's); print its accuracy", forParticipants, runPredict},
	{"data", "fetch the built-in data sets; export one as LIBSVM (data fetch|export)", forParticipants, runData},
	{"partition", "split a data set into one block file per client", forParticipants, runPartition},

	{"experiment", "run a whole federation in one process (in-memory transport)", forResearchers, runExperiment},
	{"central", "train centrally with SDCA to a relative duality gap of 1e-9", forResearchers, runCentral},
	{"suite", "the convergence suite: a fixed grid of runs against central SDCA", forResearchers, runSuite},
	{"compare", "HyFDCA against FedAvg, HyFEM and FedHybrid on the paper's grid", forResearchers, runCompare},

	{"bench", "time rounds at Fashion-MNIST scale, split by phase", forBenchmarks, runBench},
	{"bench-net", "time rounds of many participants on loopback websockets", forBenchmarks, runBenchNet},
	{"bench-abuse", "flood a server with creations, hellos, and registered participants' big frames and reconnects", forBenchmarks, runBenchAbuse},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: hyfed <command> [flags]")
	for g, title := range groupTitles {
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, c := range commands {
			if c.group == group(g) {
				fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
			}
		}
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
