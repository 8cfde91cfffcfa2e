// Package scenariocmd implements coordctl scenario list and scenario run:
// experiments that check what theory predicts.
//
// It is named scenariocmd, beside the package scenarios it imports; its
// directory is internal/cmd/scenario.
package scenariocmd
