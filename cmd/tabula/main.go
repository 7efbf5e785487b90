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
)

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "version", "--version":
		fmt.Println(Version().GitVersion)
		return
	case "serve":
	case "help", "-h", "--help":
		usage(os.Stdout)
		return
	default:
		fmt.Fprintf(os.Stderr, "tabula: unknown command %q\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}
	m := NewMain()
	if err := m.ParseFlags(os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			m.WriteUsage(os.Stdout)
			return
		}
		fmt.Fprintln(os.Stderr, "tabula:", err)
		fmt.Fprintln(os.Stderr, "Run 'tabula serve --help' for the flags.")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "tabula:", err)
		os.Exit(1)
	}
	<-ctx.Done()
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "tabula: shutdown:", err)
		os.Exit(1)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: tabula <command> [flags]

Commands:
  serve     serve the Kubernetes API (tabula serve --help for flags)
  version   print the version
`)
}
