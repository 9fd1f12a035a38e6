package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/deploy"
	"github.com/junction-router/junction/internal/pluginsys"
)

func routeCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("route", stderr)
	cfg := fs.String("config", "", "configuration file (YAML or JSON); the built-in configuration when empty")
	recipe := fs.String("recipe", "", "recipe to route with; the default recipe when empty")
	model := fs.String("model", engine.ModelMoM, "model the request asks for: MoM, auto or a configured model")
	asJSON := fs.Bool("json", false, "print the full result as JSON")
	sigModels := fs.String("signal-models", deploy.ModelsONNX, "domain, jailbreak and embedding models: onnx or lexical")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, `usage: junction route [--config FILE] [--recipe NAME] [--json] "prompt"`)
		return errUsage
	}
	prompt := strings.Join(fs.Args(), " ")
	doc, hash, err := loadDocument(*cfg)
	if err != nil {
		return err
	}
	models, closeModels, err := deploy.LocalModels(context.Background(), *sigModels, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return err
	}
	defer closeModels()
	gen, err := engine.Compile(doc, hash, engine.Options{Plugins: pluginsys.ModuleAware{V: native.Stage()}, Models: models})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := gen.Route(ctx, *recipe, &engine.Request{Model: *model, Input: signal.Input{
		Text: prompt, UserTexts: []string{prompt}, AllTexts: []string{prompt},
	}})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printResult(stdout, res)
	return nil
}

func printResult(w io.Writer, res *engine.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "recipe\t%s\n", res.Recipe)
	fmt.Fprintf(tw, "signals\t\n")
	for _, s := range res.Signals {
		mark := "-"
		if s.Matched {
			mark = "MATCH"
		}
		detail := s.Value
		if s.Level != "" {
			detail = s.Level
		}
		if len(s.Entities) > 0 {
			detail = strings.Join(s.Entities, ",")
		}
		if s.Unscanned {
			detail += " (unscanned)"
		}
		if s.Error != "" {
			detail += " error=" + s.Error
		}
		fmt.Fprintf(tw, "  %s %s\t%s\tscore %.3f\t%s\t[%s, %s]\n", s.Kind, s.Name, mark, s.Score, detail, s.Method, s.Elapsed.Round(time.Microsecond))
	}
	if res.Block != nil {
		fmt.Fprintf(tw, "blocked\t403 %s by %s: %s\n", res.Block.Code, res.Block.Signal, res.Block.Message)
		tw.Flush()
		return
	}
	if res.Decision != "" {
		fmt.Fprintf(tw, "decision\t%s (confidence %.3f)\n", res.Decision, res.Confidence)
		fmt.Fprintf(tw, "matched\t%s\n", strings.Join(res.MatchedRules, ", "))
	} else {
		fmt.Fprintf(tw, "decision\tnone matched: default model\n")
	}
	fmt.Fprintf(tw, "model\t%s (%s, %s)\n", res.Model, res.ReasonCode, res.Selection)
	r := res.Reasoning
	switch {
	case r.Type == "":
		fmt.Fprintf(tw, "reasoning\tunchanged (model has no reasoning family)\n")
	case r.Enabled:
		fmt.Fprintf(tw, "reasoning\ton, effort %s (%s: %s.%s)\n", r.Effort, r.Family, r.Type, r.Param)
	default:
		fmt.Fprintf(tw, "reasoning\toff (%s: %s.%s)\n", r.Family, r.Type, r.Param)
	}
	if len(res.Plugins) > 0 {
		names := make([]string, len(res.Plugins))
		for i, p := range res.Plugins {
			names[i] = p.Type
		}
		fmt.Fprintf(tw, "plugins\t%s\n", strings.Join(names, ", "))
	}
	fmt.Fprintf(tw, "classification\t%s\n", res.ClassificationTime.Round(time.Microsecond))
	tw.Flush()
}
