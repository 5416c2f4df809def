// Package layout holds no code: its test enforces the repository's import
// rules, so a dependency that would tangle the components fails CI instead of
// review. The rules are in layout_test.go.
package layout
