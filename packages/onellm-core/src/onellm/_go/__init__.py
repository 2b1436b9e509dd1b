"""Emulation of the parts of Go that templates and the file search tool reproduce exactly.

Private: `fmt` (Go's value model and `fmt` printing), `timefmt` (time layouts), and Go's regular expressions
(`re_syntax` parses RE2 syntax, `re_prog` compiles the tree to one program and runs it, `regexp` is what callers use:
leftmost-first search with groups and `ReplaceAllString` for templates, a budgeted line search for `search_files_regex`).
Nothing here imports the template engine or the tools; their errors are `errors.GoError`.
"""
