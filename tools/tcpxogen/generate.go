package main

// docs/commands.md is every command's --help, printed by the commands
// themselves. `go generate ./...` runs this after the directives of
// generated/ (it walks packages in import-path order), so the help texts
// that quote generated facts are current.
//go:generate go run . help --markdown --out ../../docs/commands.md
