package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	switch os.Args[1] {
	case "version", "--version":
		fmt.Println(Version().GitVersion)
		return
	case "serve":
	case "help", "-h", "--help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "tabula: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	m := NewMain()
	if err := m.ParseFlags(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "tabula:", err)
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

func usage() {
	fmt.Fprint(os.Stderr, `Usage: tabula <command> [flags]

Commands:
  serve     serve the Kubernetes API (tabula serve --help for flags)
  version   print the version
`)
}
