// Command b dispatches to its own subcommands, which is allowed.
package main

import "example.com/layered/tools/b/internal/ycmd"

func main() { ycmd.Run() }
