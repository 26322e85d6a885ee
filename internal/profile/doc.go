// Package profile evaluates an NCCL environment profile script, such as the
// installer image's nccl-env-profile.sh, and returns the variables it
// exports. Profiles are shell scripts, so they are run, not pattern-matched:
// in mvdan.cc/sh's bash interpreter, inside a sandbox. It owns the sandbox
// and the taint of what the script read; it does not read images (imagefs)
// or judge the variables (internal/fabric).
//
// # The sandbox
//
//   - The initial environment is NCCL_LIB_DIR (Options.LibDir), an empty
//     LD_LIBRARY_PATH, and Options.Env. Nothing comes from the host
//     environment. The script runs as if sourced: a top-level return ends it.
//   - No external command runs. A command that is neither a builtin nor a
//     function of the script fails with status 127, as if not installed,
//     unless Options.Answers declares what it prints.
//   - A declared answer is data about the machine type the profile is
//     evaluated for, such as what nvidia-smi --query-gpu=name prints on an
//     H200 node. A command whose argv equals an answer's exactly (command
//     name and every argument, the name as the script spells it) prints the
//     answer's stdout, reads nothing and exits 0; it is not a refusal and
//     taints nothing. Any other argv, even one differing in a single word,
//     is refused as above, and so is every other command of a pipeline: in
//     nvidia-smi ... | head -n1, head is refused and taints what it prints.
//     What an answer prints counts toward the output bound. command -v and
//     type do not find answered commands (the sandbox does not know where
//     they are installed). Each use is recorded in Result.Answered, once per
//     script position and argv, so that a result names the probes it
//     depends on.
//   - There is no file system. Reading a file fails as if it did not exist,
//     every directory is empty (globs match nothing), file tests are false,
//     and command -v and type find only builtins and the script's functions.
//     Writing a file (other than /dev/null, /dev/stdout, /dev/stderr) is an
//     error.
//   - Constructs whose effect cannot be followed are errors: sourcing a file,
//     background jobs, process substitution, coprocesses, time, |&, traps,
//     aliases, functions defined by eval, and printing function bodies.
//   - The evaluation is bounded in time (Options.Timeout), in the size of the
//     script's variables and in how much it prints.
//
// Every refused command and denied access is recorded in Result.Refused,
// every answered command in Result.Answered.
//
// # Taint
//
// Discovery code in a profile probes the machine and keeps its defaults when
// the probe finds nothing; in the sandbox every probe without a declared
// answer finds nothing, and the defaults are the intended result. A value computed from a refused probe is
// different: export X=$(curl ...) would export an empty X without complaint.
// The evaluator therefore tracks which values derive from something it could
// not provide:
//
//   - A refused command or denied access taints the statement run it happens
//     in, and every statement run enclosing that one.
//   - Everything inside a command substitution is data for its result:
//     if anything in it is tainted, including a branch taken on a refused
//     probe, the result is. Likewise what the left side of a pipe prints
//     taints what the right side reads.
//   - A statement whose own expansions are tainted (a tainted command
//     substitution, tainted input, or a read of a tainted variable) taints
//     every variable it assigns. A statement whose expansions are clean
//     clears the taint of the variables it assigns. Taint is tracked per
//     statement run: a statement assigning two variables, one of them from a
//     tainted source, taints both. Function arguments carry the taint of the
//     call into $1, $@ and friends; a function's locals hide and then restore
//     the taint of the globals they shadow; subshells keep their own.
//   - Control flow in the script itself does not carry taint: after
//     if probe; then X=a; else X=b; fi, or X=${found:-default} with an empty
//     found, X is clean. This is what lets discovery fall back to defaults.
//   - Reading a variable that has no value taints the same way (it is an
//     unset variable, reported as such), except in the forms that handle
//     absence: ${X:-w}, ${X-w}, ${X:=w}, ${X=w}, ${X:+w}, ${X+w}, ${X:?w},
//     and tests ([ ], test, [[ ]]). There is no global set -u: an unset
//     variable only matters where it reaches an export. Variables the
//     interpreter would take from the machine running it (HOME, UID, EUID,
//     GID, PWD, pwd, $0, $$, $PPID, RANDOM, SRANDOM) are tainted as host-provided;
//     $? is tainted once anything was refused.
//   - At the end, every exported variable that is tainted is an
//     UnresolvedError naming the variable, the line that set it and the
//     refused command, denied path or unset variable it depends on, with
//     the variables in between. Nothing tainted is dropped or exported.
//
// The interpreter has no per-statement hook, so the evaluator instruments
// the parsed script: every statement gets two leading redirections to paths
// only this evaluation knows. Opening them marks the start of a statement
// run, closing the first marks its end, and the writers they return forward
// to the statement's real stdout and stderr, so the script cannot tell.
// Handler calls carry the current writers, which is how a refusal is
// attributed to the statement run it happens in.
//
// # Output
//
// Result.Vars lists the exported variables in the order the script first
// exported them. An input variable appears only if the script changed its
// value, so NCCL_LIB_DIR normally does not. Variables whose names end in
// PATH are ':'-separated lists and lose empty elements:
// ${NCCL_LIB_DIR}:${LD_LIBRARY_PATH} with the empty initial LD_LIBRARY_PATH
// leaves a trailing ':', which the dynamic loader reads as the current
// directory. Such variables are named in Result.Normalized.
//
// # Limits
//
// Values of variables used in arithmetic are not themselves followed as
// expressions. Assignments whose variable name is computed at run time
// (declare "$name=...") are seen only when they change the value. As in the
// interpreter, the right side of a pipe runs in the current shell, so its
// assignments persist, unlike in bash without lastpipe; their taint is then
// that of the pipe's left side.
package profile
