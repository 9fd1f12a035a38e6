package main

import (
	"context"
	"errors"
	"io"
)

func runCmd(context.Context, []string, io.Writer) error {
	return errors.New("run: the controller is not built yet")
}
