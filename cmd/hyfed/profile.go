package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
)

// profiles are hyfed serve's --cpuprofile and --memprofile. The CPU
// profile runs from the start to the exit, and the heap profile is
// written at the exit, unless signals mark a window of the server's life:
// SIGUSR1 starts the CPU profile afresh (the file is truncated: what came
// before is dropped) and writes a heap profile to MEMFILE.base; SIGUSR2
// ends the window: the CPU profile stops and the heap profile goes to
// MEMFILE then (go tool pprof -sample_index=alloc_space -base MEMFILE.base
// MEMFILE shows what the window allocated). hyfed bench-net sends them
// around its timed rounds (or its registrations).
type profiles struct {
	cpuPath, memPath string
	stderr           io.Writer

	mu    sync.Mutex
	cpu   *os.File
	ended bool // SIGUSR2 came, or the exit: the profiles are written
	sigs  chan os.Signal
	done  chan struct{}
}

// startProfiles starts what the paths ask for (either may be empty).
func startProfiles(cpuPath, memPath string, stderr io.Writer) (*profiles, error) {
	p := &profiles{cpuPath: cpuPath, memPath: memPath, stderr: stderr}
	if cpuPath == "" && memPath == "" {
		return p, nil
	}
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		p.cpu = f
	}
	p.sigs = make(chan os.Signal, 1)
	p.done = make(chan struct{})
	signal.Notify(p.sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for {
			select {
			case sig := <-p.sigs:
				if sig == syscall.SIGUSR2 {
					p.end()
				} else {
					p.mark()
				}
			case <-p.done:
				return
			}
		}
	}()
	return p, nil
}

// mark starts the CPU profile afresh and writes MEMFILE.base.
func (p *profiles) mark() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Truncate(0); err == nil {
			_, err = p.cpu.Seek(0, io.SeekStart)
		}
		if err := pprof.StartCPUProfile(p.cpu); err != nil {
			fmt.Fprintf(p.stderr, "--cpuprofile: %v\n", err)
		}
	}
	if p.memPath != "" {
		if err := writeHeapProfile(p.memPath + ".base"); err != nil {
			fmt.Fprintf(p.stderr, "--memprofile: %v\n", err)
		}
	}
}

// end writes the profiles now; nothing more is recorded.
func (p *profiles) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.ended = true
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Close(); err != nil {
			fmt.Fprintf(p.stderr, "--cpuprofile: %v\n", err)
		}
		p.cpu = nil
	}
	if p.memPath != "" {
		if err := writeHeapProfile(p.memPath); err != nil {
			fmt.Fprintf(p.stderr, "--memprofile: %v\n", err)
		}
	}
}

// stop writes the profiles at the exit (unless SIGUSR2 has).
func (p *profiles) stop() {
	if p.sigs == nil {
		return
	}
	signal.Stop(p.sigs)
	close(p.done)
	p.end()
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // in-use figures as of now
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
