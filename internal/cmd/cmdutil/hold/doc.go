// Package hold is how coordctl's lock, sem and elect take a hold and run
// it: their flags (Flags: --ttl, --timeout, --try, --lock-delay,
// --kill-grace; NAME or --name, then the command after '--'), how they
// acquire (Acquire: try once, wait, or wait with a timeout and one last
// try; WaitNotice), and the one way a hold runs (Run, RunKey): print and
// hold until a signal, or run the command under childproc.Supervise with
// coordkit's variables, signals forwarded, exit 4 on loss and the
// command's status otherwise.
//
// It is the command layer's part of a hold; internal/childproc keeps only
// the supervision of the process (and its watchdog). Errors a user's flags
// cause are usage errors (exit 2) before anything is dialled.
package hold
