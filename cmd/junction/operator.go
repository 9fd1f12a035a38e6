package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// operatorBinary is the Kubernetes operator's own binary. It lives in the nested module operator/ so that this
// binary, and the main module's tests, never compile Kubernetes packages (docs/operator.md).
const operatorBinary = "junction-operator"

// exitCode carries a child's exit status through run without another message (the child printed its own).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// operatorCmd runs junction-operator (convert, export, crd, run) with the same arguments and streams.
func operatorCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	path, err := findOperator()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	// On ctx's end (a signal to junction), pass the interrupt on and let the controller stop cleanly.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		return exitCode(ee.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("operator: run %s: %w", path, err)
	}
	return nil
}

// findOperator looks beside this executable first (bin/junction and bin/junction-operator from make), then on
// PATH.
func findOperator() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), operatorBinary)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(operatorBinary); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("operator: %s is not installed beside junction or on PATH; build it with `make operator` "+
		"(writes bin/%s; it is a separate module, operator/, so junction itself carries no Kubernetes code)", operatorBinary, operatorBinary)
}
