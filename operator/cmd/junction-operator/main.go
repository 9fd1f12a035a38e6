// Command junction-operator is Junction's Kubernetes operator: `convert` turns a JunctionRouter resource into
// Junction's configuration document, `export` does the reverse, `crd` prints the CustomResourceDefinition, and
// `run` starts the controller. `junction operator …` runs this binary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"sigs.k8s.io/yaml"

	"github.com/junction-router/junction/operator/config"
	"github.com/junction-router/junction/operator/convert"
)

const usage = `junction-operator — the Kubernetes operator of Junction (resource JunctionRouter, junction-router.io/v1alpha1)

Usage:
  junction-operator convert FILE            print the Junction configuration document of a JunctionRouter resource
  junction-operator export FILE [--name N] [--namespace NS]
                                            print a JunctionRouter resource for a Junction configuration document
  junction-operator crd                     print the CustomResourceDefinition (kubectl apply -f -)
  junction-operator run [flags]             run the controller against the cluster of the kubeconfig or the pod
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "convert":
		err = convertCmd(ctx, args[1:], stdout, stderr)
	case "export":
		err = exportCmd(args[1:], stdout, stderr)
	case "crd":
		_, err = stdout.Write(config.CRD)
	case "run":
		err = runCmd(ctx, args[1:], stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "junction-operator: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		return 2
	default:
		fmt.Fprintln(stderr, "junction-operator:", err)
		return 1
	}
}

func convertCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("junction-operator convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: junction-operator convert FILE (a JunctionRouter resource, YAML or JSON; - reads stdin)")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errUsage
	}
	data, err := readInput(fs.Arg(0))
	if err != nil {
		return err
	}
	s, err := convert.Schema()
	if err != nil {
		return err
	}
	r, err := convert.LoadResource(ctx, s, data)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	// What the controller refuses besides the configuration: TLS files outside the pod's mounts.
	out, err := convert.ToYAML(r)
	if err := errors.Join(err, convert.CheckMounts(r)); err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	_, err = stdout.Write(out)
	return err
}

func exportCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("junction-operator export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "junction", "metadata.name of the resource")
	ns := fs.String("namespace", "", "metadata.namespace of the resource (empty: none, kubectl's current namespace)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: junction-operator export FILE [--name N] [--namespace NS] (a Junction configuration document; - reads stdin)")
		fs.PrintDefaults()
	}
	// Flags may follow the file, as in the other commands' usage lines.
	var files []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(files) != 1 {
		fs.Usage()
		return errUsage
	}
	data, err := readInput(files[0])
	if err != nil {
		return err
	}
	r, notes, err := convert.FromDocument(data, *name, *ns)
	if err != nil {
		return fmt.Errorf("%s: %w", files[0], err)
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "note:", n)
	}
	out, err := yaml.Marshal(r)
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

func readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}
