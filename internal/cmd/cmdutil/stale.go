package cmdutil

// EnvEndpoints is etcd's endpoints when --endpoints is not given. A hold
// (lock, sem, elect) sets it for its command to the endpoints it holds
// through, so that a coordctl the command runs asks the same etcd.
const EnvEndpoints = "COORDCTL_ENDPOINTS"

// EnvUser is what --user defaults to: NAME:PASSWORD (or NAME, with
// --password-stdin) in the environment, which only its owner can read,
// rather than on a command line, which every user of the machine can
// (ps, /proc/PID/cmdline).
const EnvUser = "COORDCTL_USER"

// EtcdForHintsAnnotation marks a command that has --endpoints only to
// explain a stale refusal (resource put and fence): the etcd flags are
// checked when etcd is asked, not before the command runs, and a deadline
// of the command is not etcd's.
const EtcdForHintsAnnotation = "coordctl/etcd-for-hints"

// EtcdSilentHint explains a deadline of a request to etcd: etcd's silence.
const EtcdSilentHint = " (etcd did not answer within --command-timeout: the cluster may have lost its quorum or be unreachable)"
