// Package e2e holds coordctl's end-to-end tests: they run the built
// coordctl and coordkit-sidecar (internal/testbin: built once, as a release
// builds them, without the race detector — their code is raced in its own
// packages' in-process tests) and drive them as a user would, through
// processes, signals, exit codes and HTTP, against an in-process etcd.
//
// They live apart from internal/cmd/root's in-process tests so that go test runs the
// two test binaries side by side. A test belongs here when it runs the
// built binary; a test that calls the command tree in process (run,
// runInProcess) stays in internal/cmd/root. To add one, write a _test.go file in
// this package and start coordctl with startCoordctl (a process whose
// stdout is read line by line) or runBinary (run to completion); the exit
// codes are the constants in main_test.go.
package e2e
