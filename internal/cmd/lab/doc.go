// Package lab implements coordctl lab: a Raft cluster in this process to
// type commands at (or script, or drive from a browser), lab sweep and lab
// figure16.
package lab
