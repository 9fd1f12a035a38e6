package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/pluginsys"
	"github.com/junction-router/junction/recipes"
)

func configCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: junction config validate FILE... | hash FILE | schema | builtin")
		return errUsage
	}
	switch args[0] {
	case "validate":
		if len(args) < 2 {
			fmt.Fprintln(stderr, "usage: junction config validate FILE...")
			return errUsage
		}
		plugins, stopPlugins, err := pluginValidator(context.Background())
		if err != nil {
			return err
		}
		defer stopPlugins()
		failed := 0
		for _, path := range args[1:] {
			doc, canon, err := recipes.LoadFile(path)
			if err == nil {
				// Compiling catches what only the engine knows: plugin configurations.
				_, err = engine.Compile(doc, "", engine.Options{Plugins: pluginsys.ModuleAware{V: plugins}})
			}
			if err != nil {
				failed++
				if ve, ok := recipes.AsValidationError(err); ok {
					fmt.Fprintf(stdout, "%s: %d problem(s)\n", path, len(ve.Problems))
					for _, p := range ve.Problems {
						fmt.Fprintf(stdout, "  %s\n", p.String())
					}
					continue
				}
				fmt.Fprintf(stdout, "%s: %v\n", path, err)
				continue
			}
			fmt.Fprintf(stdout, "%s: valid (%s)\n", path, recipes.HashBytes(canon))
			// Keys live where the document is served, not where it is
			// checked: a missing one is a warning here, refused by serve.
			if ve, ok := recipes.AsValidationError(recipes.CheckCredentials(doc, os.LookupEnv)); ok {
				for _, p := range ve.Problems {
					fmt.Fprintf(stderr, "  warning: %s (junction serve refuses to start without it)\n", p.String())
				}
			}
		}
		if failed > 0 {
			return fmt.Errorf("%d of %d document(s) invalid", failed, len(args)-1)
		}
		return nil
	case "hash":
		if len(args) != 2 {
			fmt.Fprintln(stderr, "usage: junction config hash FILE")
			return errUsage
		}
		_, canon, err := recipes.LoadFile(args[1])
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, recipes.HashBytes(canon))
		return nil
	case "schema":
		_, err := stdout.Write(recipes.Schema())
		return err
	case "builtin":
		_, err := stdout.Write(recipes.BuiltinYAML())
		return err
	default:
		fmt.Fprintf(stderr, "junction config: unknown subcommand %q (validate, hash, schema, builtin)\n", args[0])
		return errUsage
	}
}
