package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// startServeProcess runs hyfed serve as a child (with extra flags) and
// returns it, its base URL and its create token.
func startServeProcess(ctx context.Context, dir, addr string, stderr io.Writer, env []string, extra ...string) (*exec.Cmd, string, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", "", err
	}
	token := newCreateToken()
	cmd := exec.CommandContext(ctx, exe, append([]string{"serve", "--addr", addr, "--data-dir", dir}, extra...)...)
	// HYFED_MAIN: the test binary acts as hyfed with it. The token goes
	// by the environment, not the command line others can read.
	cmd.Env = append(append(os.Environ(), "HYFED_MAIN=1", "HYFED_CREATE_TOKEN="+token), env...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "listening: ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, "", "", fmt.Errorf("hyfed serve did not start: %q %v", line, err)
	}
	go io.Copy(io.Discard, out) // the create line and anything after it
	return cmd, base, token, nil
}
